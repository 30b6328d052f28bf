"""Orphans no other proxy manager sweeps: disks and addresses carrying this installation's
labels that no VM uses, and the firewall rule once no VM of the provider is left, deleted
after `sweep_min_age` (`sweep_dry_run`: only reported). Run when GC asks for resources.

The rule is shared by every replica of the provider, and a create on another replica may
land at any moment: the VMs are listed again right before its delete (a create that landed
since GC's listing keeps it) and right after (one that landed during the delete gets it
back). A create whose insert is listed only after that re-reads the rule itself
(`Firewall.verify`) and puts it back. A sweep that finds VMs checks their rule is there
(one firewalls.get), so a failed put-back is mended within `sweep_interval`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.cloud import compute_v1

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import ProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import ResourceMissing
from proxyfleet.provisioner_gcp.calls import Compute
from proxyfleet.provisioner_gcp.instances import Firewall, InstanceView
from proxyfleet.provisioner_gcp.metrics import SWEPT
from proxyfleet.provisioner_gcp.pure import names
from proxyfleet.provisioner_gcp.pure.config import GcpSettings
from proxyfleet.provisioner_gcp.pure.plans import Orphan, sweepable, timestamp

log = get_logger("proxyfleet.gcp")
ListInstances = Callable[[], Awaitable[list[InstanceView]]]


class Sweeper:
    def __init__(
        self,
        compute: Compute,
        settings: GcpSettings,
        installation_id: str,
        provider: str,
        firewall: Firewall,
        clock: Clock,
        instances: ListInstances,
    ) -> None:
        self._c = compute
        self._instances = instances
        self._s = settings
        self._filter = names.installation_filter(installation_id, provider)
        self._firewall = firewall
        self._clock = clock
        self._interval = settings.sweep_interval
        self._last = float("-inf")
        self.last_report: list[Orphan] = []
        """What the last sweep deleted (or, dry-run, would have)."""

    async def maybe_sweep(self, instances: list[InstanceView]) -> None:
        now = self._clock.now()
        if now - self._last < self._interval:
            return
        self._last = now
        try:
            await self.sweep(instances)
        except ProviderError as exc:  # a sweep failing must not fail GC's listing
            log.warning("gcp.sweep_failed", error=str(exc))

    async def sweep(self, instances: list[InstanceView]) -> list[Orphan]:
        orphans = await self._disks() + await self._addresses()
        idle = self._clock.now() - self._firewall.last_used >= self._s.sweep_min_age
        if not instances and idle:  # no VM, and no create of this replica lately
            orphans += await self._firewall_orphan()
        due = sweepable(orphans, self._clock.now(), self._s.sweep_min_age)
        if any(o.kind == "firewall" for o in due) and await self._instances():
            log.info("gcp.firewall_kept", firewall=self._firewall.rule.name)
            due = [o for o in due if o.kind != "firewall"]  # a create landed since
        dry = self._s.sweep_dry_run
        for o in due:
            SWEPT.labels(o.kind, str(dry).lower()).inc()
            if dry:
                log.info("gcp.orphan_found", kind=o.kind, name=o.name, scope=o.scope)
                continue
            log.info("gcp.orphan_deleted", kind=o.kind, name=o.name, scope=o.scope)
            await self._delete(o)
        self.last_report = due
        if instances:  # last: a failure here must not hold up the orphans' deletes
            await self._firewall.verify()
        return due

    async def _disks(self) -> list[Orphan]:
        c = self._c

        def listing(**kw: Any) -> list[tuple[str, compute_v1.Disk]]:
            return [(s, d) for s, scoped in c.disks.aggregated_list(**kw) for d in scoped.disks]

        request = compute_v1.AggregatedListDisksRequest(project=c.project, filter=self._filter)
        found = await c.call("disks.aggregatedList", listing, request=request)
        return [
            Orphan(
                "disk", d.name, names.last_segment(d.zone or scope), timestamp(d.creation_timestamp)
            )
            for scope, d in found
            if not d.users
        ]

    async def _addresses(self) -> list[Orphan]:
        c = self._c

        def listing(**kw: Any) -> list[compute_v1.Address]:
            return [a for _, scoped in c.addresses.aggregated_list(**kw) for a in scoped.addresses]

        request = compute_v1.AggregatedListAddressesRequest(project=c.project, filter=self._filter)
        found = await c.call("addresses.aggregatedList", listing, request=request)
        return [
            Orphan("address", a.name, names.last_segment(a.region), timestamp(a.creation_timestamp))
            for a in found
            if a.status != "IN_USE"
        ]

    async def _firewall_orphan(self) -> list[Orphan]:
        have = await self._firewall.current()
        if have is None:
            return []
        created = timestamp(str(have.get("creation_timestamp", "")))
        return [Orphan("firewall", self._firewall.rule.name, "global", created)]

    async def _delete(self, o: Orphan) -> None:
        c = self._c
        rid = names.request_id(o.name, f"{o.kind}-delete", o.scope)
        try:
            if o.kind == "disk":
                req = compute_v1.DeleteDiskRequest(
                    project=c.project, zone=o.scope, disk=o.name, request_id=rid
                )
                await c.mutate("disks.delete", c.disks.delete_unary, zone=o.scope, request=req)
            elif o.kind == "address":
                areq = compute_v1.DeleteAddressRequest(
                    project=c.project, region=o.scope, address=o.name, request_id=rid
                )
                await c.mutate(
                    "addresses.delete", c.addresses.delete_unary, region=o.scope, request=areq
                )
            else:
                await self._firewall.delete()
                if await self._instances():  # an insert landed while the rule went
                    log.info("gcp.firewall_restored", firewall=self._firewall.rule.name)
                    await self._firewall.verify()
        except ResourceMissing:
            pass  # gone already
