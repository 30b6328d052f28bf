"""What a probe does to its proxy's exit address: the hysteresis step (pure, in
proxyfleet.common.domain.egress), the require_ip gate on readiness, the unknown-address metric,
and the egress script's write when a new address is confirmed (rare: the common probe,
address unchanged, adds nothing to the probe's one streak write)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.domain.egress import EgressStep, decide_egress
from proxyfleet.common.domain.lifecycle import ProbeDecision
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store.egress import AddressCounts, EgressStore
from proxyfleet.common.wire.models import Phase, Proxy
from proxyfleet.health import metrics
from proxyfleet.health.prober import Outcome
from proxyfleet.health.settings import HealthSettings

log = get_logger("proxyfleet.health.egress")

NO_ADDRESS_REASON = "exit address unknown (its provider requires one: egress.require_ip)"


class EgressRecorder:
    def __init__(
        self, store: EgressStore, settings: HealthSettings, require_ip: Collection[str] = ()
    ) -> None:
        """`require_ip`: the providers whose proxies are not ready without an address."""
        self._store = store
        self._confirm_after = settings.egress_confirm_after
        self._revoke = settings.revoke_on_egress_change
        self._require_ip = frozenset(require_ip)
        self._shown: set[tuple[str, tuple[str, ...]]] = set()  # groups the gauges show

    def step(self, proxy: Proxy, outcome: Outcome) -> EgressStep:
        """The address step of one probe; a good probe that reported no usable address
        raises the unknown-address metric and leaves everything as it was."""
        observed = outcome.result.egress_ip if outcome.result.ok else ""
        if outcome.result.ok and outcome.egress_unknown:
            metrics.EGRESS_UNKNOWN_BY_REASON[outcome.egress_unknown].inc()
        return decide_egress(
            proxy.egress_ip,
            proxy.egress_pending,
            proxy.egress_pending_n,
            observed,
            self._confirm_after,
        )

    def gate(
        self, proxy: Proxy, decision: ProbeDecision, step: EgressStep, now: float
    ) -> ProbeDecision:
        """No move to ready while the provider requires an address and none is known; a
        booting proxy past its deadline then fails like any that never gets ready."""
        if decision.next_phase is not Phase.READY or step.ip:
            return decision
        if proxy.provider not in self._require_ip:
            return decision
        next_phase, reason = None, ""
        if proxy.phase is Phase.BOOTING and proxy.boot_deadline and now >= proxy.boot_deadline:
            next_phase = Phase.FAILED
            reason = f"not healthy within boot timeout: {NO_ADDRESS_REASON}"
        return ProbeDecision(decision.ok_streak, decision.fail_streak, next_phase, reason)

    async def confirm(self, proxy: Proxy, step: EgressStep, fields: dict[str, Any]) -> None:
        """Write a confirmed change (with `fields`, the probe's own, when it makes no
        transition); a proxy moved or removed since its claim is left to whoever did it."""
        try:
            wrote = await self._store.confirm(
                proxy.id,
                step.ip,
                expected_gen=proxy.gen,
                pending=step.pending,
                pending_n=step.pending_n,
                revoke=self._revoke,
                fields=fields,
            )
        except (Conflict, NotFound):
            return
        metrics.EGRESS_CHANGES.inc()
        log.info(
            "health.egress_confirmed",
            proxy_id=proxy.id,
            provider=proxy.provider,
            egress_ip=step.ip,
            **({"from_egress_ip": proxy.egress_ip} if proxy.egress_ip else {}),
            **({"shared": wrote.shared} if wrote.shared > 1 else {}),
            **({"revoked_lease": wrote.ended_lease_id} if wrote.ended_lease_id else {}),
        )

    async def refresh_gauges(self) -> None:
        """The distinct-vs-total gauges of every group that has addresses."""
        groups = await self._store.groups()
        for kind, name in groups:
            _set_counts(kind, "/".join(name), await self._store.counts(kind, *name))
        for kind, name in self._shown - set(groups):  # no known address left there
            _set_counts(kind, "/".join(name), AddressCounts(0, 0, 0))
        self._shown = set(groups)


def _set_counts(group: str, name: str, counts: AddressCounts) -> None:
    for kind, value in (
        ("distinct", counts.distinct),
        ("proxies", counts.proxies),
        ("shared", counts.shared),
    ):
        metrics.EGRESS_ADDRESSES.labels(group=group, name=name, kind=kind).set(value)
