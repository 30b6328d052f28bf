"""Domains on one host: define and start, identify by their <metadata>, find their
address, remove with everything libvirt keeps for them (NVRAM included)."""

from __future__ import annotations

from dataclasses import dataclass

import libvirt

from proxyfleet.common.core.errors import ProviderError
from proxyfleet.common.runner.failures import ResourceMissing
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_kvm.host import HostSession
from proxyfleet.provisioner_kvm.pure.addresses import address_from_agent, address_from_leases
from proxyfleet.provisioner_kvm.pure.domain_metadata import (
    METADATA_PREFIX,
    METADATA_URI,
    DomainIdentity,
    Rebuild,
    metadata_element_xml,
    parse_metadata,
    redact_xml,
)
from proxyfleet.provisioner_kvm.pure.domain_xml import mac_from_domain_xml

_UNDEFINE_FLAGS = (
    libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
    | libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
    | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
)


@dataclass(frozen=True, slots=True)
class DomainState:
    name: str
    identity: DomainIdentity | None
    """None: the domain carries no Proxyfleet metadata (not ours)."""
    active: bool


def _metadata(dom: libvirt.virDomain) -> str | None:
    try:
        return str(dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, METADATA_URI, 0))
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN_METADATA:
            return None
        raise


class Domains:
    """The domains of one host."""

    def __init__(self, session: HostSession) -> None:
        self._s = session

    async def state(self, name: str) -> DomainState | None:
        """The domain `name`, or None when there is none."""

        def read(conn: libvirt.virConnect) -> tuple[str | None, bool]:
            dom = conn.lookupByName(name)
            return _metadata(dom), bool(dom.isActive())

        try:
            raw, active = await self._s.run("domainGetMetadata", read, domain=name)
        except ResourceMissing:
            return None
        self._s.calls.detail(
            "libvirt.domain_metadata", domain=name, metadata=redact_xml(raw) if raw else raw
        )
        return DomainState(name, parse_metadata(raw) if raw else None, active)

    async def define_and_start(self, name: str, xml: str) -> None:
        self._s.calls.detail("libvirt.domain_xml", domain=name, xml=redact_xml(xml))
        await self._s.run("domainDefineXML", lambda c: c.defineXML(xml), domain=name)
        await self.start(name)

    async def set_identity(
        self, name: str, spec: ProxySpec, created_at: float, rebuild: Rebuild
    ) -> None:
        """Rewrite our metadata element (same identity and age, plus what rebuilds it)."""
        xml = metadata_element_xml(spec.proxy_id, spec.installation_id, created_at, rebuild)

        def write(conn: libvirt.virConnect) -> None:
            dom = conn.lookupByName(name)
            flags = libvirt.VIR_DOMAIN_AFFECT_CONFIG
            if dom.isActive():
                flags |= libvirt.VIR_DOMAIN_AFFECT_LIVE
            element = libvirt.VIR_DOMAIN_METADATA_ELEMENT
            dom.setMetadata(element, xml, METADATA_PREFIX, METADATA_URI, flags)

        await self._s.run("domainSetMetadata", write, domain=name)

    async def start(self, name: str) -> None:
        def start(conn: libvirt.virConnect) -> None:
            dom = conn.lookupByName(name)
            if not dom.isActive():
                dom.create()

        await self._s.run("domainCreate", start, domain=name)

    async def address(self, name: str, network: str) -> str | None:
        """The guest's IPv4 address: from the guest agent, else the network's DHCP leases;
        None while neither knows it (the guest is still booting)."""
        xml = await self._s.run(
            "domainGetXMLDesc", lambda c: c.lookupByName(name).XMLDesc(0), domain=name
        )
        mac = mac_from_domain_xml(xml)
        try:
            ifaces = await self._s.run(
                "domainInterfaceAddresses",
                lambda c: c.lookupByName(name).interfaceAddresses(
                    libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, 0
                ),
                domain=name,
            )
            found = address_from_agent(ifaces or {}, mac)
        except ResourceMissing:
            raise
        except ProviderError:
            found = None  # no agent yet: it starts late in the guest's boot
        if found is None and mac:
            try:
                leases = await self._s.run(
                    "networkGetDHCPLeases",
                    lambda c: c.networkLookupByName(network).DHCPLeases(mac, 0),
                    network=network,
                    mac=mac,
                )
                found = address_from_leases(leases or [], mac)
            except ProviderError:
                found = None
        self._s.calls.detail("libvirt.domain_address", domain=name, mac=mac, address=found)
        return found

    async def names(self) -> list[str]:
        """The names of every domain on the host (one call, no metadata read)."""
        return await self._s.run(
            "listAllDomains", lambda c: [str(d.name()) for d in c.listAllDomains(0)]
        )

    async def list_ours(self) -> list[DomainState]:
        """Every domain on the host that carries Proxyfleet metadata."""
        found = []
        for name in await self.names():
            state = await self.state(name)
            if state is not None and state.identity is not None:
                found.append(state)
        return found

    async def remove(self, name: str) -> bool:
        """Destroy and undefine `name` (with its NVRAM); False when it was not there."""

        def remove(conn: libvirt.virConnect) -> None:
            dom = conn.lookupByName(name)
            if dom.isActive():
                dom.destroy()
            try:
                dom.undefineFlags(_UNDEFINE_FLAGS)
            except libvirt.libvirtError as exc:
                # Drivers without NVRAM support (the test driver) refuse the flag.
                if exc.get_error_code() not in (
                    libvirt.VIR_ERR_NO_SUPPORT,
                    libvirt.VIR_ERR_INVALID_ARG,
                    libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED,
                ):
                    raise
                dom.undefine()

        try:
            await self._s.run("domainDestroyUndefine", remove, domain=name)
        except ResourceMissing:
            return False
        return True
