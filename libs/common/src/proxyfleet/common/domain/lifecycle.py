"""The proxy lifecycle as data, and the health hysteresis as a pure function."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from proxyfleet.common.core.ids import new_proxy_id
from proxyfleet.common.wire.models import Phase, Proxy

ALLOWED: dict[Phase, frozenset[Phase]] = {
    Phase.PENDING: frozenset({Phase.PROVISIONING, Phase.FAILED, Phase.DELETING}),
    Phase.PROVISIONING: frozenset({Phase.BOOTING, Phase.FAILED, Phase.DELETING}),
    Phase.BOOTING: frozenset({Phase.READY, Phase.FAILED, Phase.DELETING}),
    # A provider that sees a serving proxy's resource fail for good (a pod OOM-killed or
    # evicted, a spot VM preempted) fails it at once, lease revoked with it: health
    # may never see it unhealthy when the container restarts in place.
    Phase.READY: frozenset({Phase.UNHEALTHY, Phase.FAILED, Phase.DELETING}),
    Phase.UNHEALTHY: frozenset({Phase.READY, Phase.DELETING, Phase.FAILED}),
    Phase.DELETING: frozenset({Phase.DELETED}),
    # An external proxy (never deleted: its source lists it) is re-probed while failed and
    # serves again after a good probe.
    Phase.FAILED: frozenset({Phase.DELETING, Phase.READY}),
    Phase.DELETED: frozenset(),
}

# Phases in which a proxy has (or may have) a running resource that health should watch.
PROBED: frozenset[Phase] = frozenset({Phase.BOOTING, Phase.READY, Phase.UNHEALTHY})
# Phases that count towards a provider's max_proxies: the proxy holds, or will hold, a
# resource (failed ones have asked for their delete).
COUNTED: frozenset[Phase] = frozenset(set(Phase) - {Phase.FAILED, Phase.DELETED})
# Phases from which an admin delete makes sense.
DELETABLE: frozenset[Phase] = frozenset(set(Phase) - {Phase.DELETING, Phase.DELETED})
TERMINAL: frozenset[Phase] = frozenset({Phase.DELETED})


def new_credentials() -> tuple[str, str]:
    """Per-proxy basic-auth credentials. Both start with a letter, so no tool ever reads
    them as a command-line option; both are URL-safe."""
    return f"u{secrets.token_hex(8)}", f"k{secrets.token_urlsafe(24)}"


def pending_proxy(
    provider: str,
    zone: str,
    now: float,
    *,
    labels: Mapping[str, str] | None = None,
    placement: Mapping[str, str] | None = None,
    pool: str = "",
) -> Proxy:
    """A new proxy as a create stores it: where every lifecycle starts, with a fresh id and
    credentials of its own (no open proxy is ever made)."""
    username, password = new_credentials()
    return Proxy(
        id=new_proxy_id(),
        provider=provider,
        zone=zone,
        phase=Phase.PENDING,
        gen=0,
        username=username,
        password=password,
        created_at=now,
        updated_at=now,
        labels=dict(labels or {}),
        placement=dict(placement or {}),
        pool=pool,
    )


def can_transition(src: Phase, dst: Phase) -> bool:
    return dst in ALLOWED[src]


@dataclass(frozen=True, slots=True)
class Hysteresis:
    """How many consecutive probes flip a proxy's health, and how long it may stay
    unhealthy."""

    unhealthy_after: int = 3
    ready_after: int = 2
    unhealthy_timeout: float = 300.0
    """Seconds after which an unhealthy proxy's next failed probe fails it; 0: never."""


@dataclass(frozen=True, slots=True)
class ProbeDecision:
    """Streaks after a probe, and the phase to move to (None: stay)."""

    ok_streak: int
    fail_streak: int
    next_phase: Phase | None
    reason: str = ""


def decide_after_probe(
    phase: Phase,
    ok: bool,
    ok_streak: int,
    fail_streak: int,
    *,
    now: float,
    boot_deadline: float,
    since: float,
    error: str = "",
    rules: Hysteresis = Hysteresis(),
) -> ProbeDecision:
    """Ready after the first good probe while booting (or failed: an external proxy);
    unhealthy after N failures; ready again after M successes; a booting proxy past its
    deadline fails, and so does an unhealthy one whose probe fails
    `rules.unhealthy_timeout` or more after `since` (when it entered its phase: the
    proxy's `updated_at`)."""
    oks = ok_streak + 1 if ok else 0
    fails = 0 if ok else fail_streak + 1
    if phase is Phase.BOOTING:
        if ok:
            return ProbeDecision(oks, fails, Phase.READY)
        if boot_deadline and now >= boot_deadline:
            reason = f"not healthy within boot timeout: {error or 'no successful probe'}"
            return ProbeDecision(oks, fails, Phase.FAILED, reason)
        return ProbeDecision(oks, fails, None)
    if phase is Phase.FAILED and ok:  # only an external proxy is probed while failed
        return ProbeDecision(oks, fails, Phase.READY)
    if phase is Phase.READY and fails >= rules.unhealthy_after:
        return ProbeDecision(oks, fails, Phase.UNHEALTHY, error)
    if phase is Phase.UNHEALTHY:
        if oks >= rules.ready_after:
            return ProbeDecision(oks, fails, Phase.READY)
        timeout = rules.unhealthy_timeout
        # Only a failed probe: a good one may be the first of its way back.
        if not ok and timeout > 0 and now - since >= timeout:
            reason = f"unhealthy for {timeout:g} s: {error or 'no successful probe'}"
            return ProbeDecision(oks, fails, Phase.FAILED, reason)
    return ProbeDecision(oks, fails, None)


def may_fail_unhealthy(counts: Mapping[Phase, int], max_share: float) -> bool:
    """Whether a provider whose proxies are `counts` by phase may have an unhealthy proxy
    failed for its timeout: not while more than `max_share` of its ready and unhealthy
    proxies are unhealthy (a target or network outage looks like that, and would otherwise
    have the whole fleet deleted), though a single unhealthy proxy always may."""
    unhealthy = counts.get(Phase.UNHEALTHY, 0)
    serving = unhealthy + counts.get(Phase.READY, 0)
    return unhealthy <= max(1.0, max_share * serving)
