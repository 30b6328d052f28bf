"""Notices proxies whose VM Google preempted and fails them with that reason (their delete
intent, queued by the same transition, removes what is left). One listing per interval."""

from __future__ import annotations

from proxyfleet.common.core.errors import ProviderError, StoreUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.lost import Lost, Running
from proxyfleet.common.runner.lost_watcher import LostResourceWatcher
from proxyfleet.provisioner_gcp.adapter import GcpProvider
from proxyfleet.provisioner_gcp.metrics import PREEMPTED
from proxyfleet.provisioner_gcp.pure import preemption

log = get_logger("proxyfleet.gcp")


class PreemptionWatcher(LostResourceWatcher[GcpProvider]):
    async def lost(self, running: list[Running]) -> list[Lost]:
        if not running:
            return []
        statuses = {i.proxy_id: i.status for i in await self.provider.instances()}
        return preemption.lost(running, statuses)

    def check_failed(self, exc: ProviderError | StoreUnavailable) -> None:
        log.warning("gcp.preemption_check_failed", error=str(exc))

    def proxy_failed(self, lost: Lost) -> None:
        PREEMPTED.inc()
        log.warning("gcp.proxy_preempted", proxy_id=lost.proxy.proxy_id, reason=lost.reason)
