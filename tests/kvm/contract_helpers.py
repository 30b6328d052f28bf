"""What the KVM subclasses of the provider contract share: reading and planting domains
with a libvirt connection of their own, beside the adapter under test."""

from __future__ import annotations

import asyncio
import contextlib

import libvirt

from proxyfleet.provisioner_kvm.pure.domain_xml import DomainSpec, render_domain_xml
from proxyfleet.provisioner_kvm.pure.names import domain_name


def domain_xml(proxy_id: str, installation_id: str, network: str, pool_dir: str) -> str:
    """A domain as the adapter defines it (its metadata names proxy and installation)."""
    return render_domain_xml(
        DomainSpec(
            name=domain_name(proxy_id),
            proxy_id=proxy_id,
            installation_id=installation_id,
            created_at=1000.0,
            vcpus=1,
            memory_mib=64,
            disk_path=f"{pool_dir}/{proxy_id}.qcow2",
            disk_format="qcow2",
            seed_path=f"{pool_dir}/{proxy_id}.iso",
            network=network,
            firmware="bios",
            domain_type="qemu",
        )
    )


def _uuids(uri: str, name: str) -> list[str]:
    conn = libvirt.open(uri)
    try:
        return [d.UUIDString() for d in conn.listAllDomains() if d.name() == name]
    finally:
        conn.close()


async def domain_uuids(uri: str, proxy_id: str) -> list[str]:
    """The UUIDs of the proxy's domain (one at most: libvirt names are unique; a domain
    deleted and built again would have a new UUID)."""
    return await asyncio.to_thread(_uuids, uri, domain_name(proxy_id))


def _define(uri: str, xml: str, start: bool) -> None:
    conn = libvirt.open(uri)
    try:
        dom = conn.defineXML(xml)
        if start:
            dom.create()
    finally:
        conn.close()


async def define_domain(uri: str, xml: str, *, start: bool = False) -> None:
    await asyncio.to_thread(_define, uri, xml, start)


def _remove(uri: str, names: list[str]) -> None:
    conn = libvirt.open(uri)
    try:
        for name in names:
            with contextlib.suppress(libvirt.libvirtError):
                dom = conn.lookupByName(name)
                if dom.isActive():
                    dom.destroy()
                dom.undefine()
    finally:
        conn.close()


async def remove_domains(uri: str, proxy_ids: list[str]) -> None:
    await asyncio.to_thread(_remove, uri, [domain_name(p) for p in proxy_ids])
