from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from typing import Literal

import pytest

from proxyfleet.provisioner_kvm.pure.domain_metadata import (
    METADATA_URI,
    DomainIdentity,
    identity_from_domain_xml,
)
from proxyfleet.provisioner_kvm.pure.domain_xml import (
    DomainSpec,
    disk_paths_from_domain_xml,
    mac_from_domain_xml,
    render_domain_xml,
)

DISK = "/var/lib/libvirt/images/pf-p1-disk.qcow2"
SEED = "/var/lib/libvirt/images/pf-p1-seed.iso"
CREATED = 1_767_225_600.125


def _spec(
    firmware: Literal["uefi", "bios"] = "uefi", domain_type: Literal["kvm", "qemu"] = "kvm"
) -> DomainSpec:
    return DomainSpec(
        name="pf-p1",
        proxy_id="p1",
        installation_id="inst-1",
        created_at=CREATED,
        vcpus=2,
        memory_mib=1024,
        disk_path=DISK,
        disk_format="qcow2",
        seed_path=SEED,
        network="default",
        firmware=firmware,
        domain_type=domain_type,
    )


def _render(spec: DomainSpec) -> ET.Element:
    return ET.fromstring(render_domain_xml(spec))  # noqa: S314 - our own output


@pytest.mark.parametrize("firmware", ["uefi", "bios"])
def test_domain_structure(firmware: Literal["uefi", "bios"]) -> None:
    root = _render(_spec(firmware))
    assert root.tag == "domain"
    assert root.get("type") == "kvm"
    assert root.findtext("name") == "pf-p1"
    memory = root.find("memory")
    assert memory is not None
    assert (memory.get("unit"), memory.text) == ("MiB", "1024")
    assert root.findtext("vcpu") == "2"
    ostype = root.find("os/type")
    assert ostype is not None
    assert (ostype.text, ostype.get("arch"), ostype.get("machine")) == ("hvm", "x86_64", "q35")
    boot = root.find("os/boot")
    assert boot is not None
    assert boot.get("dev") == "hd"
    assert root.find("features/acpi") is not None
    assert root.find("features/apic") is not None
    clock = root.find("clock")
    assert clock is not None
    assert clock.get("offset") == "utc"
    assert root.findtext("on_poweroff") == "destroy"
    assert root.findtext("on_reboot") == "restart"
    assert root.findtext("on_crash") == "destroy"


def test_uefi_uses_firmware_autoselection() -> None:
    os_el = _render(_spec("uefi")).find("os")
    assert os_el is not None
    assert os_el.get("firmware") == "efi"
    # No explicit loader/nvram: libvirt picks OVMF and creates the NVRAM itself.
    assert os_el.find("loader") is None
    assert os_el.find("nvram") is None
    secure_boot = os_el.find("firmware/feature[@name='secure-boot']")
    assert secure_boot is not None
    assert secure_boot.get("enabled") == "no"


def test_bios_has_no_firmware_attribute() -> None:
    os_el = _render(_spec("bios")).find("os")
    assert os_el is not None
    assert os_el.get("firmware") is None
    assert os_el.find("firmware") is None


def test_cpu_passthrough_only_with_kvm() -> None:
    cpu = _render(_spec(domain_type="kvm")).find("cpu")
    assert cpu is not None
    assert cpu.get("mode") == "host-passthrough"
    tcg = _render(_spec(domain_type="qemu"))
    assert tcg.get("type") == "qemu"
    assert tcg.find("cpu") is None


@pytest.mark.parametrize("firmware", ["uefi", "bios"])
def test_devices(firmware: Literal["uefi", "bios"]) -> None:
    devices = _render(_spec(firmware)).find("devices")
    assert devices is not None
    disks = devices.findall("disk")
    # File paths only: AppArmor rules are generated for file disks, not pool volumes.
    assert [d.get("type") for d in disks] == ["file", "file"]
    disk, seed = disks
    assert disk.get("device") == "disk"
    assert disk.find("driver[@name='qemu'][@type='qcow2']") is not None
    assert disk.find(f"source[@file='{DISK}']") is not None
    assert disk.find("target[@dev='vda'][@bus='virtio']") is not None
    assert seed.get("device") == "cdrom"
    assert seed.find("driver[@type='raw']") is not None
    assert seed.find(f"source[@file='{SEED}']") is not None
    assert seed.find("target[@dev='sda'][@bus='sata']") is not None
    assert seed.find("readonly") is not None
    nic = devices.find("interface[@type='network']")
    assert nic is not None
    assert nic.find("source[@network='default']") is not None
    assert nic.find("model[@type='virtio']") is not None
    assert devices.find("serial[@type='pty']") is not None
    assert devices.find("console[@type='pty']/target[@type='serial']") is not None
    channel = devices.find("channel[@type='unix']/target[@type='virtio']")
    assert channel is not None
    assert channel.get("name") == "org.qemu.guest_agent.0"
    assert devices.findtext("rng[@model='virtio']/backend[@model='random']") == "/dev/urandom"
    assert devices.find("memballoon[@model='virtio']") is not None


def test_values_are_escaped() -> None:
    spec = replace(_spec(), installation_id="a<b>&'\"c", disk_path="/pool/it's & <x>.qcow2")
    text = render_domain_xml(spec)
    assert disk_paths_from_domain_xml(text)[0] == "/pool/it's & <x>.qcow2"
    assert identity_from_domain_xml(text) == DomainIdentity("p1", "a<b>&'\"c", CREATED)


def test_metadata_is_namespaced_in_the_domain() -> None:
    root = _render(_spec())
    instance = root.find(f"metadata/{{{METADATA_URI}}}instance")
    assert instance is not None
    assert instance.findtext(f"{{{METADATA_URI}}}proxy-id") == "p1"
    assert instance.findtext(f"{{{METADATA_URI}}}installation-id") == "inst-1"
    assert instance.findtext(f"{{{METADATA_URI}}}created-at") == repr(CREATED)


@pytest.mark.parametrize("firmware", ["uefi", "bios"])
def test_identity_round_trip(firmware: Literal["uefi", "bios"]) -> None:
    text = render_domain_xml(_spec(firmware))
    assert identity_from_domain_xml(text) == DomainIdentity("p1", "inst-1", CREATED)


LIBVIRT_XML = """<domain type='kvm' id='3'>
  <name>pf-p1</name>
  <metadata>
    <proxyfleet:instance xmlns:proxyfleet="https://proxyfleet.dev/xmlns/libvirt/1">
      <proxyfleet:proxy-id>p1</proxyfleet:proxy-id>
      <proxyfleet:installation-id>i1</proxyfleet:installation-id>
      <proxyfleet:created-at>1700000000.0</proxyfleet:created-at>
    </proxyfleet:instance>
  </metadata>
  <devices>
    <disk type='file' device='disk'>
      <source file='/pool/pf-p1-disk.qcow2' index='2'/>
      <backingStore type='file' index='3'><source file='/pool/pf-base.qcow2'/></backingStore>
    </disk>
    <disk type='file' device='cdrom'><source file='/pool/pf-p1-seed.iso'/></disk>
    <disk type='file' device='cdrom'><target dev='sdb' bus='sata'/></disk>
    <interface type='network'>
      <mac address='52:54:00:AB:CD:EF'/>
      <source network='default'/>
    </interface>
    <interface type='network'><mac address='52:54:00:00:00:02'/></interface>
  </devices>
</domain>"""


def test_read_back_libvirt_xml() -> None:
    assert identity_from_domain_xml(LIBVIRT_XML) == DomainIdentity("p1", "i1", 1700000000.0)
    # Backing files belong to the base image, not to the domain.
    assert disk_paths_from_domain_xml(LIBVIRT_XML) == [
        "/pool/pf-p1-disk.qcow2",
        "/pool/pf-p1-seed.iso",
    ]
    assert mac_from_domain_xml(LIBVIRT_XML) == "52:54:00:ab:cd:ef"


def test_no_interface_no_mac() -> None:
    assert mac_from_domain_xml("<domain><devices/></domain>") is None
    assert disk_paths_from_domain_xml("<domain><devices/></domain>") == []


@pytest.mark.parametrize("text", ["", "<domain>", "<volume/>"])
def test_reading_disks_and_mac_of_malformed_xml_raises(text: str) -> None:
    with pytest.raises(ValueError, match="domain XML"):
        disk_paths_from_domain_xml(text)
    with pytest.raises(ValueError, match="domain XML"):
        mac_from_domain_xml(text)


@pytest.mark.parametrize(("vcpus", "memory"), [(0, 512), (1, 0)])
def test_bad_sizes_are_refused(vcpus: int, memory: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        render_domain_xml(replace(_spec(), vcpus=vcpus, memory_mib=memory))
