"""The libvirt domain XML of a proxy VM, and the disks and MAC read back from libvirt's.

XML is built with ElementTree, never by string formatting, so every value is escaped.
Parsing is only ever of libvirt's output. Our `<metadata>` element: `pure.domain_metadata`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET  # builds XML; parses only libvirt's output
from dataclasses import dataclass
from typing import Literal

from proxyfleet.provisioner_kvm.pure.domain_metadata import (
    METADATA_PREFIX,
    Rebuild,
    instance_element,
)
from proxyfleet.provisioner_kvm.pure.xml_tree import parse_or_none, sub_element

GUEST_AGENT_CHANNEL = "org.qemu.guest_agent.0"


@dataclass(frozen=True, slots=True)
class DomainSpec:
    """Everything that differs between two proxy VMs' domain XML."""

    name: str
    proxy_id: str
    installation_id: str
    created_at: float
    """When the domain was made (Unix seconds); GC spares domains younger than its min age."""
    vcpus: int
    memory_mib: int
    disk_path: str
    """File path of the VM's overlay disk (a volume of the host's storage pool)."""
    disk_format: str
    """Format of that disk: "qcow2" (the overlay)."""
    seed_path: str
    """File path of the NoCloud seed ISO, attached as a read-only CD-ROM."""
    network: str
    """libvirt network the VM's one interface attaches to."""
    firmware: Literal["uefi", "bios"]
    domain_type: Literal["kvm", "qemu"]
    """kvm: hardware virtualisation; qemu: TCG (software), slow but runs anywhere."""
    rebuild: Rebuild | None = None


def render_domain_xml(spec: DomainSpec) -> str:
    """The domain XML to define for a proxy VM (headless, virtio, guest agent, serial console)."""
    if spec.vcpus < 1 or spec.memory_mib < 1:
        raise ValueError("vcpus and memory_mib: expected positive numbers")
    if spec.firmware not in ("uefi", "bios") or spec.domain_type not in ("kvm", "qemu"):
        raise ValueError(f"firmware {spec.firmware!r} / domain type {spec.domain_type!r}")
    dom = ET.Element("domain", type=spec.domain_type)
    sub_element(dom, "name", spec.name)
    meta = sub_element(dom, "metadata")
    meta.append(
        instance_element(
            spec.proxy_id,
            spec.installation_id,
            spec.created_at,
            prefix=METADATA_PREFIX,
            rebuild=spec.rebuild,
        )
    )
    sub_element(dom, "memory", str(spec.memory_mib), unit="MiB")
    sub_element(dom, "currentMemory", str(spec.memory_mib), unit="MiB")
    sub_element(dom, "vcpu", str(spec.vcpus), placement="static")
    _os(dom, spec.firmware)
    features = sub_element(dom, "features")
    sub_element(features, "acpi")
    sub_element(features, "apic")
    if spec.domain_type == "kvm":
        # The guest sees the host CPU; TCG cannot pass a host CPU through, so it keeps
        # libvirt's default model there.
        sub_element(dom, "cpu", mode="host-passthrough", check="none", migratable="on")
    clock = sub_element(dom, "clock", offset="utc")
    sub_element(clock, "timer", name="rtc", tickpolicy="catchup")
    sub_element(clock, "timer", name="pit", tickpolicy="delay")
    sub_element(clock, "timer", name="hpet", present="no")
    sub_element(dom, "on_poweroff", "destroy")
    sub_element(dom, "on_reboot", "restart")
    sub_element(dom, "on_crash", "destroy")
    _devices(dom, spec)
    ET.indent(dom)
    return ET.tostring(dom, encoding="unicode")


def _os(dom: ET.Element, firmware: str) -> None:
    if firmware == "uefi":
        # Firmware autoselection: libvirt picks an OVMF build and creates the NVRAM file.
        # Secure boot off, so images with unsigned kernels boot and no SMM is needed.
        os_el = sub_element(dom, "os", firmware="efi")
        sub_element(os_el, "type", "hvm", arch="x86_64", machine="q35")
        fw = sub_element(os_el, "firmware")
        sub_element(fw, "feature", enabled="no", name="secure-boot")
    else:
        os_el = sub_element(dom, "os")
        sub_element(os_el, "type", "hvm", arch="x86_64", machine="q35")
    sub_element(os_el, "boot", dev="hd")


def _devices(dom: ET.Element, spec: DomainSpec) -> None:
    dev = sub_element(dom, "devices")
    # File disks only, never type='volume': libvirt's AppArmor/SELinux labelling only
    # knows about file paths, so a pool-volume disk can be denied at start.
    disk = sub_element(dev, "disk", type="file", device="disk")
    sub_element(disk, "driver", name="qemu", type=spec.disk_format, discard="unmap")
    sub_element(disk, "source", file=spec.disk_path)
    sub_element(disk, "target", dev="vda", bus="virtio")
    seed = sub_element(dev, "disk", type="file", device="cdrom")
    sub_element(seed, "driver", name="qemu", type="raw")
    sub_element(seed, "source", file=spec.seed_path)
    sub_element(seed, "target", dev="sda", bus="sata")
    sub_element(seed, "readonly")
    nic = sub_element(dev, "interface", type="network")
    sub_element(nic, "source", network=spec.network)
    sub_element(nic, "model", type="virtio")
    serial = sub_element(dev, "serial", type="pty")
    sub_element(serial, "target", port="0")
    console = sub_element(dev, "console", type="pty")
    sub_element(console, "target", type="serial", port="0")
    # The guest agent reports the VM's addresses even when the network's DHCP is not
    # libvirt's own.
    channel = sub_element(dev, "channel", type="unix")
    sub_element(channel, "target", type="virtio", name=GUEST_AGENT_CHANNEL)
    rng = sub_element(dev, "rng", model="virtio")
    sub_element(rng, "backend", "/dev/urandom", model="random")
    sub_element(dev, "memballoon", model="virtio")


def disk_paths_from_domain_xml(domain_xml: str) -> list[str]:
    """The source file of every disk of a domain (disks without a file are skipped).

    Raises ValueError on malformed XML: libvirt never produces it, and guessing an empty
    list would leave the disks behind when the domain is deleted.
    """
    root = _parse_strict(domain_xml)
    return [path for source in root.iterfind("devices/disk/source") if (path := source.get("file"))]


def mac_from_domain_xml(domain_xml: str) -> str | None:
    """The MAC address of the domain's first interface (libvirt assigns it at define)."""
    root = _parse_strict(domain_xml)
    mac = root.find("devices/interface/mac")
    address = mac.get("address") if mac is not None else None
    return address.lower() if address else None


def _parse_strict(domain_xml: str) -> ET.Element:
    root = parse_or_none(domain_xml)
    if root is None or root.tag != "domain":
        raise ValueError("expected a libvirt domain XML")
    return root
