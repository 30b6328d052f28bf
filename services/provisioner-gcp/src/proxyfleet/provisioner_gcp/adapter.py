"""The GCP provider: the Provider port over the Compute Engine REST API.

create: adopt the proxy's instance if one exists in any zone (a retried or redelivered
create, a failover elsewhere); else make sure the firewall rule is right, insert the VM
with a requestId derived from the proxy id and zone and wait for its operation; then read
the rule again (another replica's sweeper may have deleted it meanwhile) and return the
VM's ephemeral external IP. A zone without capacity moves an unpinned proxy to the next
zone of the provider; the result then names that zone (`Provisioned.zone`), which the
runner records for the proxy. Compute mutations in flight are bounded per replica.
"""

from __future__ import annotations

import asyncio

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.domain.cloud_init import CloudInitSpec, render_user_data
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import (
    ClassifiedPermanentError,
    ClassifiedTemporaryError,
    Kind,
    failure_kind,
)
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_gcp.calls import Compute
from proxyfleet.provisioner_gcp.instances import Firewall, Images, Instances, InstanceView
from proxyfleet.provisioner_gcp.metrics import ZONE_ERRORS
from proxyfleet.provisioner_gcp.pure import names, plans
from proxyfleet.provisioner_gcp.pure.config import GcpSettings, is_pinned
from proxyfleet.provisioner_gcp.pure.plans import (
    FirewallRule,
    InstancePlan,
    instance_body,
    landed_zone,
    zone_order,
)
from proxyfleet.provisioner_gcp.sweeper import Sweeper

log = get_logger("proxyfleet.gcp")
ADDRESS_WAIT = 60.0
"""Seconds a VM whose insert is DONE may still show no external IP (Google assigns it with
the insert; past this the next delivery asks again)."""


class GcpProvider:
    """Each proxy is a GCE VM running Squid from cloud-init, reached on its external IP."""

    def __init__(
        self,
        settings: GcpSettings,
        installation_id: str,
        provider: str,
        *,
        clock: Clock | None = None,
        address_poll_interval: float = 1.0,
    ) -> None:
        """Raises ConfigError when the credentials cannot be found."""
        names.check_label_value("installation id", installation_id)
        self._s = settings
        self._installation = installation_id
        self._provider = provider
        self._clock = clock or SystemClock()
        self._poll = address_poll_interval
        # Reads may run beside the bounded mutations (each holds a thread while it waits).
        self.compute = Compute(settings, self._clock, settings.max_operations_in_flight + 8)
        self._instances = Instances(self.compute)
        self._images = Images(self.compute, settings, self._clock)
        tag = names.target_tag(installation_id, provider)
        self.firewall = Firewall(
            self.compute,
            FirewallRule(
                name=names.firewall_name(installation_id, provider),
                network=settings.network,
                target_tag=tag,
                port=settings.proxy_port,
                source_ranges=tuple(sorted(settings.source_ranges)),
            ),
            self._clock,
        )
        self._tags = sorted({tag, *settings.network_tags})
        self._in_flight = asyncio.Semaphore(settings.max_operations_in_flight)
        self.sweeper = Sweeper(
            self.compute,
            settings,
            installation_id,
            provider,
            self.firewall,
            self._clock,
            self.instances,
        )

    # ---- the Provider port ------------------------------------------------------------

    async def create(self, spec: ProxySpec) -> Provisioned:
        if spec.zone not in self._s.zones:
            raise PermanentProviderError(f"zone {spec.zone!r} has no GCE zone in the config")
        found = await self._instances.find(names.proxy_filter(self._installation, spec.proxy_id))
        if found:
            inst = found[0]
            log.info("gcp.instance_adopted", proxy_id=spec.proxy_id, zone=inst.gce_zone)
        else:
            await self.firewall.ensure()
            inst = await self._insert_somewhere(spec)
        # Compute lists the VM now, so a sweep from here on keeps the rule (or puts it back);
        # one on another replica may have taken it since `ensure` (adopting: the first try).
        await self.firewall.verify()
        zone = landed_zone(spec.zone, inst.gce_zone, self._s.zones)
        if not zone and self._s.zones[spec.zone] != inst.gce_zone:
            log.warning("gcp.instance_in_unmapped_zone", proxy_id=spec.proxy_id, zone=inst.gce_zone)
        return await self._provisioned(inst, zone)

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        if resource_id:
            try:
                targets = [names.parse_resource_id(resource_id)]
            except ValueError as exc:
                raise PermanentProviderError(str(exc)) from None
        else:  # the create never returned: look in every zone
            found = await self._instances.find(names.proxy_filter(self._installation, proxy_id))
            targets = [(i.gce_zone, i.name) for i in found]
        for gce_zone, name in targets:
            async with self._in_flight:
                deleted = await self._instances.delete(
                    gce_zone, name, names.request_id(proxy_id, "delete", gce_zone)
                )
            if deleted:
                log.info("gcp.instance_deleted", proxy_id=proxy_id, zone=gce_zone)

    async def list_managed(self) -> list[ManagedResource]:
        """This installation's and provider's instances in every zone; GC asking is also
        when orphan disks, addresses and firewall rules are swept."""
        found = await self.instances()
        by_gce = {g: z for z, g in self._s.zones.items()}
        resources = [
            _managed(i, by_gce.get(i.gce_zone, ""), self._s.external_ip)
            for i in found
            if i.proxy_id and i.labels.get(names.LABEL_INSTALLATION) == self._installation
        ]
        await self.sweeper.maybe_sweep(found)
        return resources

    async def instances(self) -> list[InstanceView]:
        return await self._instances.find(
            names.installation_filter(self._installation, self._provider)
        )

    async def close(self) -> None:
        """Close the HTTP sessions; the VMs keep running."""
        self.compute.close()

    # ---- steps ------------------------------------------------------------------------

    async def _insert_somewhere(self, spec: ProxySpec) -> InstanceView:
        zones = zone_order(spec.zone, self._s.zones, is_pinned(spec.placement))
        image = await self._images.source_image()
        name = names.instance_name(spec.proxy_id)
        for i, (zone, gce_zone) in enumerate(zones):
            try:
                await self._insert(spec, name, gce_zone, image)
            except ClassifiedTemporaryError as exc:
                if exc.classified.kind is not Kind.CAPACITY:
                    raise
                ZONE_ERRORS.labels(gce_zone, "capacity").inc()
                if i + 1 == len(zones):
                    raise TemporaryProviderError(
                        f"no capacity in {', '.join(g for _, g in zones)}: {exc}",
                        retry_after=exc.retry_after,
                    ) from None
                log.warning(
                    "gcp.zone_failover", proxy_id=spec.proxy_id, zone=zone, to=zones[i + 1][0]
                )
                continue
            except PermanentProviderError as exc:
                if failure_kind(exc) is Kind.QUOTA:
                    ZONE_ERRORS.labels(gce_zone, "quota").inc()
                raise
            inst = await self._instances.get(gce_zone, name)
            if inst is None:
                raise TemporaryProviderError(f"instance {name} not found after its insert")
            return inst
        raise AssertionError("unreachable: zone_order is never empty")

    async def _insert(self, spec: ProxySpec, name: str, gce_zone: str, image: str) -> None:
        s = self._s
        labels = names.labels(
            installation_id=self._installation,
            provider=self._provider,
            proxy_id=spec.proxy_id,
            port=s.proxy_port,
            created_at=self._clock.now(),
            extra=dict(s.labels),
        )
        user_data = render_user_data(
            CloudInitSpec(
                proxy_id=spec.proxy_id,
                hostname=name,
                username=spec.username,
                password=spec.password,
                proxy_port=s.proxy_port,
                connect_ports=list(s.connect_ports),
                deny_private_destinations=s.deny_private_destinations,
                source_ranges=list(s.source_ranges),
                guest_agent=None,
                package_update=True,
            )
        )
        body = instance_body(
            InstancePlan(
                name=name,
                gce_zone=gce_zone,
                machine_type=s.machine_type,
                source_image=image,
                disk_size_gb=s.disk_size_gb,
                disk_type=s.disk_type,
                network=s.network,
                subnetwork=s.subnetwork,
                spot=s.spot,
                labels=labels,
                tags=self._tags,
                service_account=s.service_account,
                user_data=user_data,
                credentials=(spec.username, spec.password),
                external_ip=s.external_ip,
            )
        )
        rid = names.request_id(spec.proxy_id, "insert", gce_zone)
        async with self._in_flight:
            for attempt in (1, 2):
                try:
                    await self._instances.insert(gce_zone, body, rid)
                    break
                except ClassifiedPermanentError as exc:
                    # Made by an earlier attempt whose requestId Compute no longer holds
                    # (or by another replica): the caller reads it back by name.
                    if exc.classified.code != "alreadyExists":
                        raise
                    break
                except ClassifiedTemporaryError as exc:
                    # No answer: the insert may have landed. The same requestId makes the
                    # second attempt return the first one's operation, never a second VM.
                    if exc.classified.code != "no_response" or attempt == 2:
                        raise
                    log.info("gcp.insert_retried", proxy_id=spec.proxy_id, zone=gce_zone)
        log.info("gcp.instance_inserted", proxy_id=spec.proxy_id, zone=gce_zone, spot=s.spot)

    async def _provisioned(self, inst: InstanceView, zone: str) -> Provisioned:
        deadline = self._clock.now() + ADDRESS_WAIT
        while self._clock.now() < deadline:
            if inst.status in ("TERMINATED", "STOPPING", "STOPPED", "SUSPENDED"):
                raise PermanentProviderError(
                    f"instance {inst.name} is {inst.status} (preempted by Google?)"
                )
            if address := inst.address(self._s.external_ip):
                return Provisioned(
                    resource_id=names.resource_id(inst.gce_zone, inst.name),
                    host=address,
                    port=self._s.proxy_port,
                    zone=zone,
                )
            await asyncio.sleep(self._poll)
            got = await self._instances.get(inst.gce_zone, inst.name)
            if got is None:
                raise TemporaryProviderError(f"instance {inst.name} disappeared while starting")
            inst = got
        what = "external IP" if self._s.external_ip else "internal IP (not running)"
        raise TemporaryProviderError(f"instance {inst.name}: no {what} yet")


def _managed(i: InstanceView, zone: str, external: bool) -> ManagedResource:
    """A listed instance with what rebuilds its proxy after a store reset: the address,
    the port label and the credentials metadata (the user-data holds only a hash)."""
    username, password = plans.credentials_of(i.metadata) or ("", "")
    port = i.labels.get(names.LABEL_PORT, "")
    return ManagedResource(
        resource_id=names.resource_id(i.gce_zone, i.name),
        proxy_id=i.proxy_id,
        installation_id=i.labels.get(names.LABEL_INSTALLATION, ""),
        created_at=float(i.labels.get(names.LABEL_CREATED, "0") or 0),
        zone=zone,
        host=i.address(external),
        port=int(port) if port.isdigit() else 0,
        username=username,
        password=password,
    )
