"""What a ProxyPool's `status` says, built from the pool as the store holds it. Pure: no I/O.

The status is the pool controller's (PoolStatus: counts, conditions, last decision) as
Kubernetes tools read a status: camelCase fields, conditions with "True"/"False"/"Unknown"
and an RFC 3339 lastTransitionTime (`kubectl wait --for=condition=Ready`), and an
observedGeneration of the resource's own metadata.generation once the controller acts on
that spec. The operator's own verdicts (a spec it refused, a name another source owns, a
pool of that name still being deleted) take the Ready condition over.

Nothing in it changes from one look to the next unless the pool did: the operator patches
the resource only when the status differs, so an idle pool costs no API writes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from proxyfleet.common.domain.pool_spec import POOL_LABEL, Condition, PoolRecord

READY = "Ready"


class _Camel(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class PoolCondition(_Camel):
    """One condition, as Kubernetes conventions write them."""

    type: str
    """Ready, Progressing, CapacityExceeded, ProviderFailing, OwnerConflict, ..."""
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    """One CamelCase word (InvalidSpec, OwnerConflict, Deleting, ...)."""
    message: str = ""
    """What happened, for people."""
    last_transition_time: str = ""
    """When the status last changed (RFC 3339)."""


class ScalingDecision(_Camel):
    """The pool controller's last scaling decision and why."""

    time: str
    """When it was taken (RFC 3339)."""
    action: str
    """scale_up or scale_down."""
    from_size: int
    to_size: int
    reason: str


class ProxyPoolStatus(_Camel):
    """The pool as its controller last saw it."""

    desired: int = 0
    """The size the controller keeps now: spec.size, or autoscale's latest."""
    ready: int = 0
    """Ready members in rotation (not draining, not quarantined)."""
    leased: int = 0
    """Members under a lease."""
    free: int = 0
    """Ready, not leased, not cooling down."""
    starting: int = 0
    """Members being created or booting."""
    unhealthy: int = 0
    """Members failing their health checks."""
    draining: int = 0
    """Members taken out of rotation, deleted once their leases end."""
    quarantined: int = 0
    """Members an admin or the outcomes took out of rotation, kept for inspection."""
    surge: int = 0
    """Members beyond the desired size (replacements and recycles in flight)."""
    owner: str = ""
    """Which source declares the pool: kubernetes (this resource), api or config."""
    owner_ref: str = ""
    """The declaring resource (<namespace>/<name>) or config file."""
    observed_generation: int = 0
    """The metadata.generation this status is about."""
    pool_generation: int = 0
    """The generation of the pool's spec in Proxyfleet's store."""
    selector: str = ""
    """The label selector of the pool's members (the scale subresource's)."""
    last_decision: ScalingDecision | None = None
    conditions: list[PoolCondition] = []


@dataclass(frozen=True, slots=True)
class Verdict:
    """The operator's own finding about a resource, shown as its Ready condition."""

    reason: str
    """InvalidSpec, OwnerConflict, PoolDeleting or Deleting."""
    message: str
    counts: bool = True
    """Whether the pool's counts are this resource's (not another owner's pool)."""


def rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def build_status(
    name: str,
    ref: str,
    generation: int,
    record: PoolRecord | None,
    verdict: Verdict | None,
    previous: Mapping[str, Any],
    now: float,
    *,
    caught_up: bool,
) -> ProxyPoolStatus:
    """The status to write: `record` is the pool in the store (None: not there), `ref`
    this resource's `<namespace>/<name>`, `previous` the status it has now, `caught_up`
    whether the store holds this resource's spec and the controller has acted on it."""
    old = _decode_previous(previous)
    ours = record is not None and (verdict is None or verdict.counts)
    out = ProxyPoolStatus(selector=f"{POOL_LABEL}={name}")
    if record is not None:
        out.owner, out.owner_ref = record.owner.value, record.owner_ref
    if ours and record is not None:
        out.pool_generation = record.gen
        out.desired = record.desired
        if (s := record.status) is not None:
            out.desired = s.desired
            out.ready, out.leased, out.free, out.starting = s.ready, s.leased, s.free, s.starting
            out.unhealthy, out.draining, out.quarantined = s.unhealthy, s.draining, s.quarantined
            out.surge = s.surge
            if (d := s.last_decision) is not None:
                out.last_decision = ScalingDecision(
                    time=rfc3339(d.time),
                    action=d.action,
                    from_size=d.from_size,
                    to_size=d.to_size,
                    reason=d.reason,
                )
    # The resource's generation is observed once the operator has judged it, or once the
    # controller acts on the spec it holds; until then the previous one stands.
    out.observed_generation = generation if verdict or caught_up else old.observed_generation
    conditions = _conditions(record if ours else None, verdict, ref)
    out.conditions = [_stamped(c, old.conditions, now) for c in conditions]
    return out


def _conditions(record: PoolRecord | None, verdict: Verdict | None, ref: str) -> list[Condition]:
    """The controller's conditions, with the operator's verdict as the Ready one."""
    found: list[Condition] = []
    if record is not None and record.status is not None:
        found = list(record.status.conditions)
    if verdict is not None:
        found = [c for c in found if c.type != READY]
        found.insert(0, _not_ready(verdict.reason, verdict.message))
    elif record is None:
        found = [_not_ready("NotDeclared", f"no pool is declared for {ref} yet")]
    elif record.status is None:
        found.insert(0, _not_ready("AwaitingController", "no status from the pool controller yet"))
    return found


def _not_ready(reason: str, message: str) -> Condition:
    return Condition(type=READY, status=False, reason=reason, message=message)


def _stamped(c: Condition, previous: list[PoolCondition], now: float) -> PoolCondition:
    """A condition with its transition time: the controller's own when it gives one, else
    the previous status's while the condition has not changed, else now."""
    status: Literal["True", "False"] = "True" if c.status else "False"
    if c.since:
        when = rfc3339(c.since)
    else:
        same = [p for p in previous if p.type == c.type and p.status == status]
        when = same[0].last_transition_time if same and same[0].last_transition_time else ""
        when = when or rfc3339(now)
    return PoolCondition(
        type=c.type, status=status, reason=c.reason, message=c.message, last_transition_time=when
    )


def _decode_previous(previous: Mapping[str, Any]) -> ProxyPoolStatus:
    """The resource's current status, or an empty one where it is missing or malformed (a
    status is ours to rewrite; a bad one is replaced, not trusted)."""
    try:
        return msgspec.convert(dict(previous), ProxyPoolStatus)
    except msgspec.ValidationError:
        return ProxyPoolStatus()


def as_json(status: ProxyPoolStatus) -> dict[str, Any]:
    """The status as the resource carries it: every field but an absent last decision,
    even at its zero value (a reader sees `ready: 0`, not nothing)."""
    out: dict[str, Any] = msgspec.to_builtins(status)
    for f in msgspec.structs.fields(ProxyPoolStatus):
        if f.default is not None and f.encode_name not in out:
            out[f.encode_name] = msgspec.to_builtins(getattr(status, f.name))
    return out


def merge_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch that turns the status `current` into `wanted` ({} when they
    are equal): changed keys, and null for each key to drop."""
    patch: dict[str, Any] = {k: v for k, v in wanted.items() if current.get(k) != v}
    patch.update({k: None for k in current if k not in wanted})
    return patch
