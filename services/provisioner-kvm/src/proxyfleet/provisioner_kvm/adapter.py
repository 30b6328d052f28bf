"""The KVM provider: the Provider port over libvirt hosts reached through SSH tunnels.

create: choose the host (`host_placement`: adopt the proxy's domain where a host has it,
else the host its pin names, else the one with the most room), build the VM there unless
adopted (`domain_build`: base image uploaded once per host at a time, the proxy pinned to
the host, overlay, cloud-init seed, domain), wait for the guest's address, drop the pin.
Every step first looks for what an earlier attempt left, so a retried or redelivered
create (on any replica) adopts instead of duplicating.
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
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_kvm.coordination import (
    LocalPins,
    LocalUploads,
    PlacementPins,
    UploadLocks,
)
from proxyfleet.provisioner_kvm.domain_build import DomainBuilder, rebuild_of
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import Connector, HostSession, SshConnector
from proxyfleet.provisioner_kvm.host_placement import HostPlacement
from proxyfleet.provisioner_kvm.image_store import ImageStore
from proxyfleet.provisioner_kvm.libvirt_calls import silence_libvirt_stderr
from proxyfleet.provisioner_kvm.metrics import PLACEMENTS
from proxyfleet.provisioner_kvm.networks import HostNetworks
from proxyfleet.provisioner_kvm.pure.config import KvmHost, KvmSettings
from proxyfleet.provisioner_kvm.pure.names import (
    domain_name,
    overlay_volume_name,
    parse_resource_id,
    resource_id,
    seed_volume_name,
)
from proxyfleet.provisioner_kvm.pure.placement import resolve_image
from proxyfleet.provisioner_kvm.volumes import Pool

log = get_logger("proxyfleet.kvm")


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
        self._clock = clock or SystemClock()
        self._poll = address_poll_interval
        self.sessions: Mapping[str, HostSession] = {
            h.name: HostSession(h, connector_for(h), trace_full=trace_full) for h in settings.hosts
        }
        self._pins = pins or LocalPins(self._clock)
        """Proxy -> host a create began building its domain on, until a create returns or
        the proxy is deleted: a redelivery while that host is down waits for it instead of
        building a second domain elsewhere."""
        self._placement = HostPlacement(self._pins, settings.host_retry_after, self._clock)
        self._builder = DomainBuilder(
            settings,
            installation_id,
            images=image_store or ImageStore(Path(settings.image_cache_dir)),
            pins=self._pins,
            uploads=uploads or LocalUploads(),
            clock=self._clock,
        )
        self.networks = HostNetworks()

    # ---- the Provider port ------------------------------------------------------------

    async def create(self, spec: ProxySpec) -> Provisioned:
        session, adopt = await self._placement.place(spec, self.sessions)
        with self._placement.under_way(spec.proxy_id, session.host.name):
            address = await self._create_on(session, adopt, spec)
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
            await self._builder.build(
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
            if state.identity.rebuild != rebuild_of(spec):  # made before metadata carried it
                await domains.set_identity(name, spec, state.identity.created_at, rebuild_of(spec))
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


def _parse(rid: str) -> tuple[str, str]:
    try:
        return parse_resource_id(rid)
    except ValueError:
        raise PermanentProviderError(f"resource id {rid!r}: expected <host>/<domain>") from None
