"""Instances, the firewall rule and the boot image: the Compute steps the adapter composes.

Each step is idempotent: inserts carry a requestId derived from the proxy id (and zone),
a name that exists already is adopted, a delete of what is gone succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from google.cloud import compute_v1

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import ClassifiedPermanentError, ResourceMissing
from proxyfleet.provisioner_gcp.calls import Compute, is_already_exists
from proxyfleet.provisioner_gcp.pure import names
from proxyfleet.provisioner_gcp.pure.config import GcpSettings
from proxyfleet.provisioner_gcp.pure.plans import FirewallRule, firewall_changes

log = get_logger("proxyfleet.gcp")
IMAGE_CACHE_SECONDS = 600.0
"""A family's newest image is asked for at most this often (every create would add a call)."""


@dataclass(frozen=True, slots=True)
class InstanceView:
    """What the adapter reads back from one instance (never its metadata values in logs)."""

    name: str
    gce_zone: str
    status: str
    nat_ip: str
    internal_ip: str
    labels: dict[str, str]
    metadata: list[tuple[str, str]]

    def address(self, external: bool) -> str:
        """Where the proxy is reached: its external IP, or its internal one for a VM
        without (known only once it runs); "" while there is none yet."""
        if external:
            return self.nat_ip
        return self.internal_ip if self.status == "RUNNING" else ""

    @property
    def proxy_id(self) -> str:
        return self.labels.get(names.LABEL_PROXY, "")


def view(instance: compute_v1.Instance) -> InstanceView:
    nat = ""
    internal = instance.network_interfaces[0].network_i_p if instance.network_interfaces else ""
    for nic in instance.network_interfaces:
        for ac in nic.access_configs:
            nat = nat or ac.nat_i_p
    return InstanceView(
        name=instance.name,
        gce_zone=names.last_segment(instance.zone),
        status=instance.status,
        nat_ip=nat,
        internal_ip=internal,
        labels=dict(instance.labels),
        metadata=[(i.key, i.value) for i in instance.metadata.items],
    )


class Instances:
    def __init__(self, compute: Compute) -> None:
        self._c = compute

    async def find(self, filter_: str) -> list[InstanceView]:
        """Instances matching `filter_` in every zone (aggregated list, all pages)."""
        c = self._c

        def listing(**kw: Any) -> list[compute_v1.Instance]:
            found: list[compute_v1.Instance] = []
            for _scope, scoped in c.instances.aggregated_list(**kw):
                found.extend(scoped.instances)
            return found

        request = compute_v1.AggregatedListInstancesRequest(project=c.project, filter=filter_)
        found = await c.call("instances.aggregatedList", listing, request=request)
        return [view(i) for i in found]

    async def get(self, gce_zone: str, name: str) -> InstanceView | None:
        c = self._c
        request = compute_v1.GetInstanceRequest(project=c.project, zone=gce_zone, instance=name)
        try:
            return view(await c.call("instances.get", c.instances.get, gce_zone, request=request))
        except ResourceMissing:
            return None

    async def insert(self, gce_zone: str, body: dict[str, Any], request_id: str) -> None:
        c = self._c
        request = compute_v1.InsertInstanceRequest(
            project=c.project,
            zone=gce_zone,
            instance_resource=compute_v1.Instance(body),
            request_id=request_id,
        )
        await c.mutate("instances.insert", c.instances.insert_unary, gce_zone, request=request)

    async def delete(self, gce_zone: str, name: str, request_id: str) -> bool:
        """Delete one instance; False when it was not there."""
        c = self._c
        request = compute_v1.DeleteInstanceRequest(
            project=c.project, zone=gce_zone, instance=name, request_id=request_id
        )
        try:
            await c.mutate("instances.delete", c.instances.delete_unary, gce_zone, request=request)
        except ResourceMissing:
            return False
        return True


class Firewall:
    """The one rule of this installation and provider, reconciled on its content.

    Every replica of the provider shares it, and any replica's sweeper may delete it while
    no VM is listed: `ensure` (before an insert) checks it once per process, `verify`
    (once the VM is listed) reads it afresh and puts it back if a sweep took it meanwhile.
    """

    def __init__(self, compute: Compute, rule: FirewallRule, clock: Clock) -> None:
        self._c = compute
        self._clock = clock
        self.rule = rule
        self._checked = False
        self._lock = asyncio.Lock()
        self.last_used = float("-inf")
        """Clock time of this replica's last ensure: its sweeper leaves the rule alone for
        `sweep_min_age` after that (less churn; what keeps other replicas' VMs covered is
        the sweeper's listings and `verify`)."""

    async def ensure(self) -> None:
        self.last_used = self._clock.now()
        if self._checked:
            return
        async with self._lock:
            if not self._checked:
                await self._reconcile()
                self._checked = True

    async def verify(self) -> None:
        """The rule read again (one firewalls.get) and mended like `ensure` does: another
        replica's sweep may have deleted it since this replica's `ensure`, having listed
        no VM before this one's insert landed."""
        if firewall_changes(self.rule, await self.current()) is None:
            return
        async with self._lock:  # concurrent creates of this replica mend it once
            await self._reconcile()
            self._checked = True

    async def _reconcile(self) -> None:
        c, rule = self._c, self.rule
        have = await self.current()
        patch = firewall_changes(rule, have)
        if patch is None:
            return
        if have is None:
            await self._insert()
            return
        if patch.pop("recreate", False):
            await self.delete()
            await self._reconcile()
            return
        # No requestId either: the same correction may be needed again after the next
        # edit by hand, and a patch that lands twice changes nothing.
        try:
            await c.mutate(
                "firewalls.patch",
                c.firewalls.patch_unary,
                request=compute_v1.PatchFirewallRequest(
                    project=c.project,
                    firewall=rule.name,
                    firewall_resource=compute_v1.Firewall(patch),
                ),
            )
        except ResourceMissing:
            await self._insert()  # a sweep on another replica deleted it meanwhile
            return
        log.info("gcp.firewall_corrected", firewall=rule.name, fields=sorted(patch))

    async def _insert(self) -> None:
        """No requestId: the rule is made again after each sweep that deleted it, and a
        fixed id would have Compute answer with the first insert's operation and make
        nothing. The name keeps it single: `alreadyExists` means another replica (or this
        one's sweeper) made it meanwhile."""
        c, rule = self._c, self.rule
        try:
            await c.mutate(
                "firewalls.insert",
                c.firewalls.insert_unary,
                request=compute_v1.InsertFirewallRequest(
                    project=c.project, firewall_resource=compute_v1.Firewall(rule.body())
                ),
            )
        except ClassifiedPermanentError as exc:
            if not is_already_exists(exc):
                raise
            log.info("gcp.firewall_made_elsewhere", firewall=rule.name)
            return
        log.info("gcp.firewall_created", firewall=rule.name, port=rule.port)

    async def current(self) -> dict[str, Any] | None:
        c = self._c
        try:
            fw = await c.call(
                "firewalls.get",
                c.firewalls.get,
                request=compute_v1.GetFirewallRequest(project=c.project, firewall=self.rule.name),
            )
        except ResourceMissing:
            return None
        return {
            "allowed": [
                {"I_p_protocol": a.I_p_protocol, "ports": list(a.ports)} for a in fw.allowed
            ],
            "source_ranges": list(fw.source_ranges),
            "target_tags": list(fw.target_tags),
            "source_tags": list(fw.source_tags),
            "source_service_accounts": list(fw.source_service_accounts),
            "direction": fw.direction or "INGRESS",
            "disabled": bool(fw.disabled),
            "network": fw.network,
            "creation_timestamp": fw.creation_timestamp,
        }

    async def delete(self) -> None:
        c = self._c
        with contextlib.suppress(ResourceMissing):  # gone already
            await c.mutate(
                "firewalls.delete",
                c.firewalls.delete_unary,
                request=compute_v1.DeleteFirewallRequest(
                    project=c.project, firewall=self.rule.name
                ),
            )
        self._checked = False


class Images:
    def __init__(self, compute: Compute, settings: GcpSettings, clock: Clock) -> None:
        self._c = compute
        self._s = settings
        self._clock = clock
        self._cached: tuple[str, float] | None = None
        self._lock = asyncio.Lock()

    async def source_image(self) -> str:
        """The explicit image, or the family's newest (asked again every few minutes)."""
        if self._s.image:
            return self._s.image
        async with self._lock:  # one lookup for a burst of creates
            now = self._clock.now()
            if self._cached and now - self._cached[1] < IMAGE_CACHE_SECONDS:
                return self._cached[0]
            self._cached = (await self._lookup(), now)
            return self._cached[0]

    async def _lookup(self) -> str:
        s, c = self._s, self._c
        image = await c.call(
            "images.getFromFamily",
            c.images.get_from_family,
            request=compute_v1.GetFromFamilyImageRequest(
                project=s.image_project, family=s.image_family
            ),
        )
        return image.self_link or f"projects/{s.image_project}/global/images/{image.name}"
