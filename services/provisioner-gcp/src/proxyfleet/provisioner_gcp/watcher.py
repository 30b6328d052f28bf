"""Notices proxies whose VM Google preempted and fails them with that reason (their delete
intent, queued by the same transition, removes what is left). One listing per interval."""

from __future__ import annotations

import asyncio
import contextlib

from proxyfleet.common.errors import Conflict, NotFound, ProviderError, StoreUnavailable
from proxyfleet.common.lifecycle import PROBED
from proxyfleet.common.logging import get_logger
from proxyfleet.common.models import Phase
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.provisioner_gcp.adapter import GcpProvider
from proxyfleet.provisioner_gcp.metrics import PREEMPTED
from proxyfleet.provisioner_gcp.pure.preemption import Running, lost

log = get_logger("proxyfleet.gcp")


class PreemptionWatcher:
    def __init__(
        self, provider: GcpProvider, registry: ProxyRegistry, name: str, interval: float
    ) -> None:
        self._provider = provider
        self._registry = registry
        self._name = name
        self._interval = interval

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.check_once()
            except (ProviderError, StoreUnavailable) as exc:
                log.warning("gcp.preemption_check_failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._interval)

    async def check_once(self) -> int:
        running = await self._running()
        if not running:
            return 0
        # Listed after the proxies were read: a VM made since is not needed, one deleted
        # since belongs to a proxy that the transition below finds changed (gen).
        statuses = {i.proxy_id: i.status for i in await self._provider.instances()}
        failed = 0
        for proxy, reason in lost(running, statuses):
            try:
                await self._registry.transition(
                    proxy.proxy_id, Phase.FAILED, expected_gen=proxy.gen, reason=reason
                )
            except (Conflict, NotFound):
                continue  # moved on meanwhile (deleted, failed by health, ...)
            PREEMPTED.inc()
            failed += 1
            log.warning("gcp.proxy_preempted", proxy_id=proxy.proxy_id, reason=reason)
        return failed

    async def _running(self) -> list[Running]:
        out: list[Running] = []
        for phase in sorted(PROBED):
            cursor = ""
            while True:
                page, cursor = await self._registry.page(
                    provider=self._name, phase=phase, cursor=cursor, limit=500
                )
                out += [Running(p.id, p.gen, p.resource_id) for p in page if p.resource_id]
                if not cursor:
                    break
        return out
