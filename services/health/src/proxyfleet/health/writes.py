"""What a probe writes on its proxy, and the transitions it makes (the registry's script
appends each transition's event, and the delete intent of a failed proxy, to the outbox)."""

from __future__ import annotations

from typing import Any

from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.domain.egress import EgressStep
from proxyfleet.common.domain.lifecycle import ProbeDecision
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import ProxyRegistry, TransitionResult
from proxyfleet.common.wire.models import Phase, ProbeResult, Proxy
from proxyfleet.health import metrics

log = get_logger("proxyfleet.health.worker")

_REASON_PHASES = frozenset({Phase.FAILED, Phase.UNHEALTHY})


def probe_fields(decision: ProbeDecision, result: ProbeResult, step: EgressStep) -> dict[str, Any]:
    """What a probe writes on its proxy: streaks, time, error; the time of the last good
    probe and latency when it succeeded (a failure keeps the last known ones); a new
    address's confirmation count (the confirmed address itself: the egress script)."""
    fields: dict[str, Any] = {
        "ok_streak": decision.ok_streak,
        "fail_streak": decision.fail_streak,
        "last_probe_at": result.time,
        "last_probe_error": result.error,
    }
    if result.ok:
        # Piggybacks on the write every probe makes already: grants read it (freshness).
        fields["last_ok_at"] = result.time
        fields["latency_ms"] = result.latency_ms
    if step.dirty and not step.changed:
        fields["egress_pending"] = step.pending
        fields["egress_pending_n"] = step.pending_n
    return fields


async def transition(
    registry: ProxyRegistry,
    proxy: Proxy,
    phase: Phase,
    decision: ProbeDecision,
    fields: dict[str, Any],
) -> None:
    """Move the proxy as the probe decided, unless it moved since its claim."""
    fields["reason"] = decision.reason if phase in _REASON_PHASES else ""
    try:
        moved = await registry.transition(proxy.id, phase, expected_gen=proxy.gen, **fields)
    except (Conflict, NotFound):
        return  # moved or removed since the claim: whoever did it owns the proxy now
    _log_transition(proxy, phase, decision, moved)


def _log_transition(
    proxy: Proxy, phase: Phase, decision: ProbeDecision, moved: TransitionResult
) -> None:
    metrics.TRANSITIONS.labels(phase=phase.value).inc()
    log.info(
        "health.proxy_transition",
        proxy_id=proxy.id,
        provider=proxy.provider,
        previous=moved.previous.value,
        phase=phase.value,
        gen=moved.gen,
        **({"reason": decision.reason} if decision.reason else {}),
        **({"revoked_lease": moved.ended_lease_id} if moved.ended_lease_id else {}),
    )
