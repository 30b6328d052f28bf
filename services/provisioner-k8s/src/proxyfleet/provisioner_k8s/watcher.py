"""Fails booting and ready proxies whose pod failed for good (image pull, crash loop, OOM,
eviction) or vanished, with that reason: the transition to FAILED queues the delete
intent that removes the pod's objects. Woken by the pod watch when a failure appears,
and every `interval` seconds as a safety net."""

from __future__ import annotations

import asyncio
import contextlib

from proxyfleet.common.errors import Conflict, NotFound, ProviderError, StoreUnavailable
from proxyfleet.common.lifecycle import PROBED
from proxyfleet.common.logging import get_logger
from proxyfleet.common.models import Phase
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.metrics import PODS_FAILED
from proxyfleet.provisioner_k8s.pure import names
from proxyfleet.provisioner_k8s.pure.pods import PodState

log = get_logger("proxyfleet.k8s")
GONE_REASON = "pod gone: deleted outside Proxyfleet"


class PodFailureWatcher:
    def __init__(
        self, provider: K8sProvider, registry: ProxyRegistry, name: str, interval: float
    ) -> None:
        self._provider = provider
        self._registry = registry
        self._name = name
        self._interval = interval
        self._wake = asyncio.Event()
        provider.pods.on_failure.append(self._failed)

    def _failed(self, state: PodState) -> None:
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._wake.clear()
            try:
                await self.check_once()
            except (ProviderError, StoreUnavailable) as exc:
                log.warning("k8s.failure_check_failed", error=str(exc))
            waits = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait(waits, timeout=self._interval,
                                   return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            for w in waits:
                w.cancel()

    async def check_once(self) -> int:
        """Fail every proxy with a pod whose pod failed or is gone; how many."""
        pods = self._provider.pods
        await pods.start(30.0)
        failed = 0
        for proxy_id, gen in await self._running():
            name = names.object_name(proxy_id)
            state = pods.get(name)
            if state is not None and not state.failure and not state.deleting:
                continue
            if state is None or state.deleting:
                # Not in the view: made by another replica a moment ago, or really gone.
                found = await self._provider.objects.get("pods", name)
                if found is not None and not (found.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                reason, label = GONE_REASON, "gone"
            else:
                reason, label = f"pod {name}: {state.failure}", state.failure.split(":")[0]
            try:
                await self._registry.transition(
                    proxy_id, Phase.FAILED, expected_gen=gen, reason=reason
                )
            except (Conflict, NotFound):
                continue  # moved on meanwhile (deleted, failed by health, ...)
            PODS_FAILED.labels(label).inc()
            failed += 1
            log.warning("k8s.proxy_failed", proxy_id=proxy_id, reason=reason)
        return failed

    async def _running(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for phase in sorted(PROBED):
            cursor = ""
            while True:
                page, cursor = await self._registry.page(
                    provider=self._name, phase=phase, cursor=cursor, limit=500
                )
                out += [(p.id, p.gen) for p in page if p.resource_id]
                if not cursor:
                    break
        return out
