"""libvirt's built-in test driver parses and validates our XML the way libvirtd does."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Literal

import libvirt
import pytest

from proxyfleet.provisioner_kvm.pure.domain_metadata import (
    METADATA_PREFIX,
    METADATA_URI,
    DomainIdentity,
    identity_from_domain_xml,
    metadata_element_xml,
    parse_metadata,
)
from proxyfleet.provisioner_kvm.pure.domain_xml import (
    DomainSpec,
    disk_paths_from_domain_xml,
    mac_from_domain_xml,
    render_domain_xml,
)
from proxyfleet.provisioner_kvm.pure.volume_xml import (
    base_volume_xml,
    overlay_volume_xml,
    seed_volume_xml,
)


@pytest.fixture
def conn() -> Iterator[libvirt.virConnect]:
    # test:///default is shared by every connection in the process: names below are unique.
    connection = libvirt.open("test:///default")
    yield connection
    connection.close()


@pytest.mark.parametrize(("firmware", "domain_type"), [("uefi", "kvm"), ("bios", "qemu")])
def test_pure_domain_xml_libvirt_accepts(
    conn: libvirt.virConnect, firmware: Literal["uefi", "bios"], domain_type: Literal["kvm", "qemu"]
) -> None:
    proxy_id = f"ptest{secrets.token_hex(4)}"
    spec = DomainSpec(
        name=f"pf-{proxy_id}",
        proxy_id=proxy_id,
        installation_id="inst-1",
        created_at=1_700_000_000.25,
        vcpus=1,
        memory_mib=512,
        disk_path=f"/default-pool/pf-{proxy_id}-disk.qcow2",
        disk_format="qcow2",
        seed_path=f"/default-pool/pf-{proxy_id}-seed.iso",
        network="default",
        firmware=firmware,
        domain_type=domain_type,
    )
    dom = conn.defineXML(render_domain_xml(spec))
    try:
        desc = dom.XMLDesc(0)
        assert identity_from_domain_xml(desc) == DomainIdentity(proxy_id, "inst-1", 1.70000000025e9)
        assert disk_paths_from_domain_xml(desc) == [spec.disk_path, spec.seed_path]
        mac = mac_from_domain_xml(desc)
        assert mac is not None
        assert mac.startswith("52:54:00:")

        element = libvirt.VIR_DOMAIN_METADATA_ELEMENT
        config = libvirt.VIR_DOMAIN_AFFECT_CONFIG
        dom.setMetadata(
            element,
            metadata_element_xml(proxy_id, "inst-2", 1_800_000_000.5),
            METADATA_PREFIX,
            METADATA_URI,
            config,
        )
        # libvirt hands our element back without its namespace declaration.
        returned = dom.metadata(element, METADATA_URI, config)
        assert "xmlns" not in returned
        expected = DomainIdentity(proxy_id, "inst-2", 1_800_000_000.5)
        assert parse_metadata(returned) == expected
        assert identity_from_domain_xml(dom.XMLDesc(0)) == expected
    finally:
        dom.undefine()


def test_pure_volume_xml_libvirt_accepts(conn: libvirt.virConnect) -> None:
    pool = conn.storagePoolLookupByName("default-pool")
    suffix = secrets.token_hex(4)
    base = pool.createXML(base_volume_xml(f"pf-base-t-{suffix}.qcow2", 2**30, "qcow2"), 0)
    made = [base]
    try:
        overlay = pool.createXML(
            overlay_volume_xml(f"pf-t{suffix}-disk.qcow2", 10 * 2**30, base.path(), "qcow2"), 0
        )
        made.append(overlay)
        seed = pool.createXML(seed_volume_xml(f"pf-t{suffix}-seed.iso", 65536), 0)
        made.append(seed)
        assert overlay.info()[1] == 10 * 2**30
        assert "<format type='raw'/>" in seed.XMLDesc(0)
    finally:
        for vol in reversed(made):
            vol.delete(0)
