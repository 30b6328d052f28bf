"""A proxy's VM built on a host: the base image in the host's pool, the VM's overlay disk
and cloud-init seed, then its domain defined and started. Each step first looks for what
an earlier attempt left, so a retried create adopts instead of duplicating."""

from __future__ import annotations

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.domain.cloud_init import (
    CloudInitSpec,
    render_meta_data,
    render_user_data,
)
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_kvm.coordination import PlacementPins, UploadLocks
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import HostSession
from proxyfleet.provisioner_kvm.image_store import ImageStore
from proxyfleet.provisioner_kvm.pure.config import KvmSettings
from proxyfleet.provisioner_kvm.pure.domain_metadata import Rebuild
from proxyfleet.provisioner_kvm.pure.domain_xml import DomainSpec, render_domain_xml
from proxyfleet.provisioner_kvm.pure.names import (
    base_volume_name,
    domain_name,
    overlay_volume_name,
    seed_volume_name,
)
from proxyfleet.provisioner_kvm.pure.placement import ImageRef
from proxyfleet.provisioner_kvm.pure.seed_iso import build_seed_iso
from proxyfleet.provisioner_kvm.pure.volume_xml import seed_volume_xml
from proxyfleet.provisioner_kvm.volumes import Pool

log = get_logger("proxyfleet.kvm")
GIB = 1 << 30


class DomainBuilder:
    """Builds proxy VMs from the provider's settings (sizes, image, Squid's cloud-init)."""

    def __init__(
        self,
        settings: KvmSettings,
        installation_id: str,
        *,
        images: ImageStore,
        pins: PlacementPins,
        uploads: UploadLocks,
        clock: Clock,
    ) -> None:
        self._settings = settings
        self._installation_id = installation_id
        self._images = images
        self._pins = pins
        self._uploads = uploads
        self._clock = clock

    async def build(self, session: HostSession, spec: ProxySpec, image: ImageRef) -> None:
        """Make the proxy's volumes and domain on the session's host and start it."""
        s, host, pool = self._settings, session.host, Pool(session)
        base_name = base_volume_name(image)
        base = await pool.ensure_base(
            base_name, image.format, lambda: self._images.fetch(image), self._uploads
        )
        # From here on this proxy has things of its own on the host: pinned first (see
        # `KvmProvider._pins`), so that no replica builds it elsewhere while this host is down.
        await self._pins.put(spec.proxy_id, host.name)
        capacity = max(s.disk_gib * GIB, await pool.capacity_of(base_name))
        disk = await pool.ensure_overlay(
            overlay_volume_name(spec.proxy_id), capacity, base, image.format
        )
        seed_iso = build_seed_iso(
            render_user_data(
                CloudInitSpec(
                    proxy_id=spec.proxy_id,
                    hostname=domain_name(spec.proxy_id),
                    username=spec.username,
                    password=spec.password,
                    proxy_port=s.proxy_port,
                    connect_ports=list(s.connect_ports),
                    deny_private_destinations=s.deny_private_destinations,
                    source_ranges=list(s.source_ranges),
                )
            ),
            render_meta_data(spec.proxy_id, domain_name(spec.proxy_id)),
            # No network-config: cloud-init's fallback (DHCP on the first NIC) works with every
            # renderer, while a v2 `match: {name: "e*"}` becomes an interface literally named
            # "all-ethernets" under Debian's ENI renderer (seen on a real guest).
        )
        seed_name = seed_volume_name(spec.proxy_id)
        seed = await pool.replace_small(
            seed_name, seed_volume_xml(seed_name, len(seed_iso)), seed_iso
        )
        xml = render_domain_xml(
            DomainSpec(
                name=domain_name(spec.proxy_id),
                proxy_id=spec.proxy_id,
                installation_id=self._installation_id,
                created_at=self._clock.now(),
                vcpus=s.vcpus,
                memory_mib=s.memory_mib,
                disk_path=disk,
                disk_format="qcow2",
                seed_path=seed,
                network=host.network,
                firmware=image.firmware,
                domain_type=host.domain_type,
                rebuild=rebuild_of(spec),
            )
        )
        await Domains(session).define_and_start(domain_name(spec.proxy_id), xml)
        log.info("kvm.domain_started", proxy_id=spec.proxy_id, host=host.name, image=image.key)


def rebuild_of(spec: ProxySpec) -> Rebuild:
    """What the domain's metadata keeps to register this proxy again after a store reset."""
    return Rebuild(
        zone=spec.zone,
        username=spec.username,
        password=spec.password,
        labels=dict(spec.labels),
        placement=dict(spec.placement),
    )
