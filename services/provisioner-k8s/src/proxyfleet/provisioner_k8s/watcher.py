"""Fails booting and ready proxies whose pod failed for good (image pull, crash loop, OOM,
eviction) or vanished, with that reason: the transition to FAILED queues the delete
intent that removes the pod's objects. Woken by the pod watch when a failure appears,
and every `interval` seconds as a safety net."""

from __future__ import annotations

from proxyfleet.common.core.errors import ProviderError, StoreUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.lost import Lost, Running
from proxyfleet.common.runner.lost_watcher import LostResourceWatcher
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.metrics import PODS_FAILED
from proxyfleet.provisioner_k8s.pure import names

log = get_logger("proxyfleet.k8s")
GONE_REASON = "pod gone: deleted outside Proxyfleet"


class PodFailureWatcher(LostResourceWatcher[K8sProvider]):
    def __init__(
        self, provider: K8sProvider, registry: ProxyRegistry, name: str, interval: float
    ) -> None:
        super().__init__(provider, registry, name, interval)
        provider.pods.on_failure.append(lambda _state: self.wake())

    async def lost(self, running: list[Running]) -> list[Lost]:
        """Every proxy whose pod failed or is gone."""
        pods = self.provider.pods
        await pods.start(30.0)
        out: list[Lost] = []
        for proxy in running:
            name = names.object_name(proxy.proxy_id)
            state = pods.get(name)
            if state is not None and not state.failure and not state.deleting:
                continue
            if state is None or state.deleting:
                # Not in the view: made by another replica a moment ago, or really gone.
                found = await self.provider.objects.get("pods", name)
                if found is not None and not (found.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                out.append(Lost(proxy, GONE_REASON, "gone"))
            else:
                out.append(Lost(proxy, f"pod {name}: {state.failure}", state.failure.split(":")[0]))
        return out

    def check_failed(self, exc: ProviderError | StoreUnavailable) -> None:
        log.warning("k8s.failure_check_failed", error=str(exc))

    def proxy_failed(self, lost: Lost) -> None:
        PODS_FAILED.labels(lost.cause).inc()
        log.warning("k8s.proxy_failed", proxy_id=lost.proxy.proxy_id, reason=lost.reason)
