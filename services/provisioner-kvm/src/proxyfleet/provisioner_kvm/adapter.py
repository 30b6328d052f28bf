"""The KVM provider: the Provider port over libvirt hosts reached through SSH tunnels.

create: list the domains of the zone's hosts, adopt the proxy's domain where one of them
has it, else go to the host its pin names, else pick the host with the most room
(`pure.host_choice`), make sure the base image is in its pool (one upload per host at a
time, `coordination.UploadLocks`), pin the proxy to the host (`coordination.PlacementPins`),
add the VM's overlay and cloud-init seed, define and start the domain, wait for the guest's
address, drop the pin. Every step first looks for what an earlier attempt left, so a
retried or redelivered create (on any replica) adopts instead of duplicating.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.errors import (
    PermanentProviderError,
    ProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.domain.cloud_init import (
    CloudInitSpec,
    render_meta_data,
    render_user_data,
)
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_kvm.coordination import (
    LocalPins,
    LocalUploads,
    PlacementPins,
    UploadLocks,
)
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import Connector, HostSession, SshConnector
from proxyfleet.provisioner_kvm.image_store import ImageStore
from proxyfleet.provisioner_kvm.libvirt_calls import silence_libvirt_stderr
from proxyfleet.provisioner_kvm.metrics import HOSTS_DOWN, PLACEMENTS
from proxyfleet.provisioner_kvm.networks import HostNetworks
from proxyfleet.provisioner_kvm.pure.config import KvmHost, KvmSettings
from proxyfleet.provisioner_kvm.pure.domain_metadata import Rebuild
from proxyfleet.provisioner_kvm.pure.domain_xml import DomainSpec, render_domain_xml
from proxyfleet.provisioner_kvm.pure.host_choice import (
    Adopt,
    Answered,
    Down,
    DownMarks,
    HostReport,
    NoHost,
    choose_host,
)
from proxyfleet.provisioner_kvm.pure.names import (
    base_volume_name,
    domain_name,
    overlay_volume_name,
    parse_resource_id,
    proxy_id_from_domain_name,
    resource_id,
    seed_volume_name,
)
from proxyfleet.provisioner_kvm.pure.placement import ImageRef, resolve_image
from proxyfleet.provisioner_kvm.pure.seed_iso import build_seed_iso
from proxyfleet.provisioner_kvm.pure.volume_xml import seed_volume_xml
from proxyfleet.provisioner_kvm.volumes import Pool

log = get_logger("proxyfleet.kvm")
GIB = 1 << 30


class KvmProvider:
    """Each proxy is a VM (Squid configured by cloud-init) on one of the configured hosts."""

    def __init__(
        self,
        settings: KvmSettings,
        installation_id: str,
        *,
        connector_for: Callable[[KvmHost], Connector] = SshConnector,
        image_store: ImageStore | None = None,
        clock: Clock | None = None,
        address_poll_interval: float = 3.0,
        trace_full: bool = False,
        pins: PlacementPins | None = None,
        uploads: UploadLocks | None = None,
    ) -> None:
        """`pins` and `uploads`: shared by every replica of the provider (the service passes
        Redis ones); None keeps them in this process, enough for a lone provisioner."""
        silence_libvirt_stderr()
        self._settings = settings
        self._installation_id = installation_id
        self._images = image_store or ImageStore(Path(settings.image_cache_dir))
        self._clock = clock or SystemClock()
        self._poll = address_poll_interval
        self.sessions: Mapping[str, HostSession] = {
            h.name: HostSession(h, connector_for(h), trace_full=trace_full) for h in settings.hosts
        }
        self._down = DownMarks(settings.host_retry_after)
        self._pins = pins or LocalPins(self._clock)
        """Proxy -> host a create began building its domain on, until a create returns or
        the proxy is deleted: a redelivery while that host is down waits for it instead of
        building a second domain elsewhere."""
        self._uploads = uploads or LocalUploads()
        self._under_way: dict[str, str] = {}
        """Proxy -> host of the creates placed and running now (they count as load)."""
        self.networks = HostNetworks()

    # ---- the Provider port ------------------------------------------------------------

    async def create(self, spec: ProxySpec) -> Provisioned:
        session, adopt = await self._place(spec)
        self._under_way[spec.proxy_id] = session.host.name
        try:
            address = await self._create_on(session, adopt, spec)
        finally:
            self._under_way.pop(spec.proxy_id, None)
        await self._unpin(spec.proxy_id)
        return Provisioned(
            resource_id=resource_id(session.host.name, spec.proxy_id),
            host=address,
            port=self._settings.proxy_port,
        )

    async def _create_on(self, session: HostSession, adopt: bool, spec: ProxySpec) -> str:
        await self.networks.survey(session)
        domains = Domains(session)
        name = domain_name(spec.proxy_id)
        state = await domains.state(name) if adopt else None
        if state is None:
            await self._build(
                session,
                spec,
                resolve_image(spec.placement, self._settings.images, self._settings.default_image),
            )
            PLACEMENTS.labels(session.host.name, "built").inc()
        elif state.identity is None or state.identity.proxy_id != spec.proxy_id:
            raise PermanentProviderError(
                f"host {session.host.name}: a domain named {name} exists but is not this proxy's"
            )
        else:
            log.info(
                "kvm.domain_adopted",
                proxy_id=spec.proxy_id,
                domain=name,
                host=session.host.name,
                active=state.active,
            )
            if not state.active:
                await domains.start(name)
            if state.identity.rebuild != _rebuild(spec):  # made before metadata carried it
                await domains.set_identity(name, spec, state.identity.created_at, _rebuild(spec))
            PLACEMENTS.labels(session.host.name, "adopted").inc()
        return await self._wait_for_address(domains, name, session.host.network)

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        if resource_id:
            host_name, _ = _parse(resource_id)
            session = self.sessions.get(host_name)
            if session is None:
                raise PermanentProviderError(f"resource {resource_id}: no host named {host_name}")
            await self._remove(session, proxy_id)
            await self._unpin(proxy_id)
            return
        # No resource id (the create never finished): look on every host.
        errors = []
        for session in self.sessions.values():
            try:
                await self._remove(session, proxy_id)
            except TemporaryProviderError as exc:
                errors.append(str(exc))
        if errors:
            raise TemporaryProviderError("; ".join(errors))
        await self._unpin(proxy_id)

    async def list_managed(self) -> list[ManagedResource]:
        """This installation's domains (by their metadata) on every reachable host. A host
        that is down is skipped with a warning: its domains are not candidates for deletion."""
        found: list[ManagedResource] = []
        results = await asyncio.gather(
            *(Domains(s).list_ours() for s in self.sessions.values()), return_exceptions=True
        )
        for session, result in zip(self.sessions.values(), results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, ProviderError):
                    raise result
                log.warning("kvm.host_skipped", host=session.host.name, error=str(result))
                continue
            for state in result:
                assert state.identity is not None
                if state.identity.installation_id != self._installation_id:
                    continue  # another installation's VM on a shared host: never ours to list
                found.append(
                    ManagedResource(
                        resource_id=resource_id(session.host.name, state.identity.proxy_id),
                        proxy_id=state.identity.proxy_id,
                        installation_id=state.identity.installation_id,
                        created_at=state.identity.created_at,
                        zone=session.host.zone,
                        # The address needs guest calls per domain: re-adoption learns it
                        # through create, which adopts the domain.
                        port=self._settings.proxy_port,
                        username=state.identity.rebuild.username,
                        password=state.identity.rebuild.password,
                        labels=dict(state.identity.rebuild.labels),
                        placement=dict(state.identity.rebuild.placement),
                    )
                )
        return found

    async def close(self) -> None:
        """Close every SSH tunnel and libvirt connection; the VMs keep running."""
        await asyncio.gather(*(s.close() for s in self.sessions.values()))

    # ---- steps ------------------------------------------------------------------------

    async def _place(self, spec: ProxySpec) -> tuple[HostSession, bool]:
        """The host for this proxy, and whether its listing has the proxy's domain (made by
        an earlier attempt: adopt it), from a listing of every host of its zone
        (`pure.host_choice`)."""
        zone = [s for s in self.sessions.values() if s.host.zone == spec.zone]
        if not zone:
            raise PermanentProviderError(f"no KVM host serves zone {spec.zone!r}")
        pinned = await self._pins.get(spec.proxy_id)
        pins = {spec.proxy_id: pinned} if pinned is not None else {}
        reports = await asyncio.gather(*(self._survey(s) for s in zone))
        choice = choose_host(spec.proxy_id, spec.zone, reports, pins, self._under_way)
        if isinstance(choice, NoHost) and any(isinstance(r, Down) and r.held for r in reports):
            # Nothing fits without the hosts left out: try them now rather than wait out
            # their marks (a zone's only host, or the proxy's pinned one, may be back).
            reports = await asyncio.gather(
                *(self._survey(s, earlier=r) for s, r in zip(zone, reports, strict=True))
            )
            choice = choose_host(spec.proxy_id, spec.zone, reports, pins, self._under_way)
        if isinstance(choice, NoHost):
            error = PermanentProviderError if choice.permanent else TemporaryProviderError
            raise error(choice.message)
        return self.sessions[choice.host], isinstance(choice, Adopt)

    async def _survey(self, session: HostSession, earlier: HostReport | None = None) -> HostReport:
        """The Proxyfleet domains on one host (one listing call), or why it is down. A host
        that fails is left out for `host_retry_after` seconds: not tried by each create.
        Given its `earlier` report, the host is listed only if that one left it out."""
        host = session.host
        if earlier is not None:
            if not (isinstance(earlier, Down) and earlier.held):
                return earlier
        elif (marked := self._down.get(host.name, self._clock.now())) is not None:
            return marked
        try:
            names = await Domains(session).names()
        except ProviderError as exc:
            down = Down(host.name, str(exc), isinstance(exc, PermanentProviderError))
            self._down.mark(down, self._clock.now())
            HOSTS_DOWN.labels(host.name).inc()
            log.warning(
                "kvm.host_down",
                host=host.name,
                zone=host.zone,
                error=down.error,
                retry_after=self._settings.host_retry_after,
            )
            return down
        proxies = frozenset(p for n in names if (p := proxy_id_from_domain_name(n)) is not None)
        return Answered(host.name, proxies, host.max_proxies)

    async def _build(self, session: HostSession, spec: ProxySpec, image: ImageRef) -> None:
        s, host, pool = self._settings, session.host, Pool(session)
        base_name = base_volume_name(image)
        base = await pool.ensure_base(
            base_name, image.format, lambda: self._images.fetch(image), self._uploads
        )
        # From here on this proxy has things of its own on the host: pinned first (see
        # `_pins`), so that no replica builds it elsewhere while this host is down.
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
                rebuild=_rebuild(spec),
            )
        )
        await Domains(session).define_and_start(domain_name(spec.proxy_id), xml)
        log.info("kvm.domain_started", proxy_id=spec.proxy_id, host=host.name, image=image.key)

    async def _wait_for_address(self, domains: Domains, name: str, network: str) -> str:
        deadline = time.monotonic() + self._settings.address_timeout
        while True:
            address = await domains.address(name, network)
            if address:
                return address
            if time.monotonic() >= deadline:
                raise TemporaryProviderError(
                    f"domain {name}: no address from the guest agent or DHCP after "
                    f"{self._settings.address_timeout:g} s (still booting?)"
                )
            await asyncio.sleep(self._poll)

    async def _unpin(self, proxy_id: str) -> None:
        """Best effort: a pin left behind expires, and the domain it points to is found by
        the listing first anyway."""
        try:
            await self._pins.drop(proxy_id)
        except TemporaryProviderError as exc:
            log.warning("kvm.unpin_failed", proxy_id=proxy_id, error=str(exc))

    async def _remove(self, session: HostSession, proxy_id: str) -> None:
        pool = Pool(session)
        removed = await Domains(session).remove(domain_name(proxy_id))
        for volume in (overlay_volume_name(proxy_id), seed_volume_name(proxy_id)):
            removed = await pool.delete(volume) or removed
        if removed:
            log.info("kvm.domain_deleted", proxy_id=proxy_id, host=session.host.name)


def _rebuild(spec: ProxySpec) -> Rebuild:
    return Rebuild(
        zone=spec.zone,
        username=spec.username,
        password=spec.password,
        labels=dict(spec.labels),
        placement=dict(spec.placement),
    )


def _parse(rid: str) -> tuple[str, str]:
    try:
        return parse_resource_id(rid)
    except ValueError:
        raise PermanentProviderError(f"resource id {rid!r}: expected <host>/<domain>") from None
