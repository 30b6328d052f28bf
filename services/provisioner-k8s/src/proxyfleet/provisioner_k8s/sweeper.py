"""Leftovers the owner references did not take away: this installation's Secrets,
ConfigMaps and Services whose pod is gone, deleted once older than `sweep_min_age`
(`sweep_dry_run`: only reported). Run when GC asks for the managed resources, at most
every `sweep_interval`.

The pods are listed after the objects: a create makes its pod before the pod's
dependents, so every listed dependent of a live proxy finds its pod in the later listing,
whatever the minimum age (listing pods first lost a create's ConfigMaps and Secrets made
in between once the minimum age was short)."""

from __future__ import annotations

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import ProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.provisioner_k8s.metrics import SWEPT
from proxyfleet.provisioner_k8s.objects import Objects
from proxyfleet.provisioner_k8s.pure.sweep import Leftover, leftover, orphans
from proxyfleet.provisioner_k8s.settings import Tuning

log = get_logger("proxyfleet.k8s")
SWEPT_RESOURCES = ("secrets", "configmaps", "services")


class Sweeper:
    def __init__(self, objects: Objects, selector: str, tuning: Tuning, clock: Clock) -> None:
        self._objects = objects
        self._selector = selector
        self._t = tuning
        self._clock = clock
        self._last = float("-inf")
        self.last_report: list[Leftover] = []
        """What the last sweep deleted (or, dry-run, would have)."""

    async def maybe_sweep(self) -> None:
        now = self._clock.now()
        if now - self._last < self._t.sweep_interval:
            return
        self._last = now
        try:
            await self.sweep()
        except ProviderError as exc:  # a sweep failing must not fail GC's listing
            log.warning("k8s.sweep_failed", error=str(exc))

    async def sweep(self) -> list[Leftover]:
        found: list[Leftover] = []
        for resource in SWEPT_RESOURCES:
            found += [
                leftover(resource, o) for o in await self._objects.list(resource, self._selector)
            ]
        pods = await self._objects.list("pods", self._selector)
        pod_names = {str((p.get("metadata") or {}).get("name", "")) for p in pods}
        due = orphans(found, pod_names, self._clock.now(), self._t.sweep_min_age)
        dry = self._t.sweep_dry_run
        for o in due:
            SWEPT.labels(o.resource, str(dry).lower()).inc()
            if dry:
                log.info("k8s.orphan_found", resource=o.resource, name=o.name)
                continue
            log.info("k8s.orphan_deleted", resource=o.resource, name=o.name)
            await self._objects.delete(o.resource, o.name)
        self.last_report = due
        return due
