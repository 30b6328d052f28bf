"""The libvirt domain XML of a proxy VM, and what we read back from libvirt's own XML.

XML is built with ElementTree, never by string formatting, so every value is escaped.
Parsing is only ever of libvirt's output (or of our own metadata as libvirt returns it).
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET  # builds XML; parses only libvirt's output
from dataclasses import dataclass, field
from typing import Literal

METADATA_URI = "https://proxyfleet.dev/xmlns/libvirt/1"
"""Namespace of our `<metadata>` element; GC finds our domains by it."""
METADATA_PREFIX = "proxyfleet"
"""Prefix libvirt uses for METADATA_URI in the domain XML."""

GUEST_AGENT_CHANNEL = "org.qemu.guest_agent.0"


@dataclass(frozen=True, slots=True)
class Rebuild:
    """What the metadata keeps so the proxy can be registered again from the domain after
    a store reset. The password is on the host already (the seed ISO's user-data)."""

    zone: str = ""
    username: str = ""
    password: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)


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


@dataclass(frozen=True, slots=True)
class DomainIdentity:
    """Who a domain belongs to, as recorded in its metadata."""

    proxy_id: str
    installation_id: str
    created_at: float = 0.0
    """Unix seconds from the metadata; 0.0 when absent or unreadable (counts as old)."""
    rebuild: Rebuild = field(default_factory=Rebuild)
    """Empty for a domain made before the metadata carried it (not adoptable)."""


def render_domain_xml(spec: DomainSpec) -> str:
    """The domain XML to define for a proxy VM (headless, virtio, guest agent, serial console)."""
    if spec.vcpus < 1 or spec.memory_mib < 1:
        raise ValueError("vcpus and memory_mib: expected positive numbers")
    if spec.firmware not in ("uefi", "bios") or spec.domain_type not in ("kvm", "qemu"):
        raise ValueError(f"firmware {spec.firmware!r} / domain type {spec.domain_type!r}")
    dom = ET.Element("domain", type=spec.domain_type)
    _sub(dom, "name", spec.name)
    meta = _sub(dom, "metadata")
    meta.append(
        _instance_element(
            spec.proxy_id,
            spec.installation_id,
            spec.created_at,
            prefix=METADATA_PREFIX,
            rebuild=spec.rebuild,
        )
    )
    _sub(dom, "memory", str(spec.memory_mib), unit="MiB")
    _sub(dom, "currentMemory", str(spec.memory_mib), unit="MiB")
    _sub(dom, "vcpu", str(spec.vcpus), placement="static")
    _os(dom, spec.firmware)
    features = _sub(dom, "features")
    _sub(features, "acpi")
    _sub(features, "apic")
    if spec.domain_type == "kvm":
        # The guest sees the host CPU; TCG cannot pass a host CPU through, so it keeps
        # libvirt's default model there.
        _sub(dom, "cpu", mode="host-passthrough", check="none", migratable="on")
    clock = _sub(dom, "clock", offset="utc")
    _sub(clock, "timer", name="rtc", tickpolicy="catchup")
    _sub(clock, "timer", name="pit", tickpolicy="delay")
    _sub(clock, "timer", name="hpet", present="no")
    _sub(dom, "on_poweroff", "destroy")
    _sub(dom, "on_reboot", "restart")
    _sub(dom, "on_crash", "destroy")
    _devices(dom, spec)
    ET.indent(dom)
    return ET.tostring(dom, encoding="unicode")


def _os(dom: ET.Element, firmware: str) -> None:
    if firmware == "uefi":
        # Firmware autoselection: libvirt picks an OVMF build and creates the NVRAM file.
        # Secure boot off, so images with unsigned kernels boot and no SMM is needed.
        os_el = _sub(dom, "os", firmware="efi")
        _sub(os_el, "type", "hvm", arch="x86_64", machine="q35")
        fw = _sub(os_el, "firmware")
        _sub(fw, "feature", enabled="no", name="secure-boot")
    else:
        os_el = _sub(dom, "os")
        _sub(os_el, "type", "hvm", arch="x86_64", machine="q35")
    _sub(os_el, "boot", dev="hd")


def _devices(dom: ET.Element, spec: DomainSpec) -> None:
    dev = _sub(dom, "devices")
    # File disks only, never type='volume': libvirt's AppArmor/SELinux labelling only
    # knows about file paths, so a pool-volume disk can be denied at start.
    disk = _sub(dev, "disk", type="file", device="disk")
    _sub(disk, "driver", name="qemu", type=spec.disk_format, discard="unmap")
    _sub(disk, "source", file=spec.disk_path)
    _sub(disk, "target", dev="vda", bus="virtio")
    seed = _sub(dev, "disk", type="file", device="cdrom")
    _sub(seed, "driver", name="qemu", type="raw")
    _sub(seed, "source", file=spec.seed_path)
    _sub(seed, "target", dev="sda", bus="sata")
    _sub(seed, "readonly")
    nic = _sub(dev, "interface", type="network")
    _sub(nic, "source", network=spec.network)
    _sub(nic, "model", type="virtio")
    serial = _sub(dev, "serial", type="pty")
    _sub(serial, "target", port="0")
    console = _sub(dev, "console", type="pty")
    _sub(console, "target", type="serial", port="0")
    # The guest agent reports the VM's addresses even when the network's DHCP is not
    # libvirt's own.
    channel = _sub(dev, "channel", type="unix")
    _sub(channel, "target", type="virtio", name=GUEST_AGENT_CHANNEL)
    rng = _sub(dev, "rng", model="virtio")
    _sub(rng, "backend", "/dev/urandom", model="random")
    _sub(dev, "memballoon", model="virtio")


def metadata_element_xml(
    proxy_id: str,
    installation_id: str,
    created_at: float | None = None,
    rebuild: Rebuild | None = None,
) -> str:
    """Our metadata element as given to `virDomain.setMetadata` (libvirt adds the namespace).

    Without `created_at` the element has no creation time (read back as 0.0).
    """
    element = _instance_element(proxy_id, installation_id, created_at, rebuild=rebuild)
    return ET.tostring(element, encoding="unicode")


def parse_metadata(xml_text: str) -> DomainIdentity | None:
    """The identity in our metadata element, with or without namespace; None if not ours.

    libvirt's `metadata()` returns the element without its namespace declaration, so
    elements are matched by local name. Malformed XML or a missing field gives None.
    """
    root = _parse(xml_text)
    if root is None:
        # A prefix without its declaration (`<proxyfleet:instance>`): declare it and retry.
        body = _XML_DECL.sub("", xml_text, count=1)
        root = _parse(f'<w xmlns:{METADATA_PREFIX}="{METADATA_URI}">{body}</w>')
        if root is None or len(root) != 1:
            return None
        root = root[0]
    return _identity_of(root) if _is_ours(root) else None


def identity_from_domain_xml(domain_xml: str) -> DomainIdentity | None:
    """The identity in a full domain XML (as `XMLDesc()` returns it), or None if not ours."""
    root = _parse(domain_xml)
    if root is None:
        return None
    metadata = root.find("metadata")
    if metadata is None:
        return None
    for child in metadata:
        if _is_ours(child) and (identity := _identity_of(child)) is not None:
            return identity
    return None


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


_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_PASSWORD = re.compile(r"(<(?:[\w-]+:)?password>)[^<]*(</)")


def redact_xml(text: str) -> str:
    """The XML with our metadata's password hidden, for trace logs."""
    return _PASSWORD.sub(r"\1***\2", text)


def _instance_element(
    proxy_id: str,
    installation_id: str,
    created_at: float | None,
    prefix: str = "",
    rebuild: Rebuild | None = None,
) -> ET.Element:
    # A literal `prefix:` tag plus its xmlns attribute: ElementTree writes both as given,
    # without touching its process-wide namespace registry.
    p = f"{prefix}:" if prefix else ""
    attrs = {f"xmlns:{prefix}": METADATA_URI} if prefix else {}
    inst = ET.Element(f"{p}instance", attrs)
    _sub(inst, f"{p}proxy-id", proxy_id)
    _sub(inst, f"{p}installation-id", installation_id)
    if created_at is not None:
        # repr() of a float reads back to exactly the same float.
        _sub(inst, f"{p}created-at", repr(float(created_at)))
    if rebuild is not None:
        _sub(inst, f"{p}zone", rebuild.zone)
        _sub(inst, f"{p}username", rebuild.username)
        _sub(inst, f"{p}password", rebuild.password)
        _sub(inst, f"{p}labels", json.dumps(rebuild.labels, sort_keys=True))
        _sub(inst, f"{p}placement", json.dumps(rebuild.placement, sort_keys=True))
    return inst


def _identity_of(element: ET.Element) -> DomainIdentity | None:
    fields: dict[str, str] = {}
    for child in element:
        fields.setdefault(_local(child.tag), (child.text or "").strip())
    proxy_id = fields.get("proxy-id")
    installation_id = fields.get("installation-id")
    if not proxy_id or not installation_id:
        return None
    return DomainIdentity(
        proxy_id=proxy_id,
        installation_id=installation_id,
        created_at=_seconds(fields.get("created-at", "")),
        rebuild=Rebuild(
            zone=fields.get("zone", ""),
            username=fields.get("username", ""),
            password=fields.get("password", ""),
            labels=_str_map(fields.get("labels", "")),
            placement=_str_map(fields.get("placement", "")),
        ),
    )


def _str_map(text: str) -> dict[str, str]:
    # Unreadable maps read as empty: the domain is still listed (and GC still sees it).
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _seconds(text: str) -> float:
    # A missing or garbled time must not hide the domain from GC: it counts as old, and
    # GC still deletes only domains of this installation whose proxy is gone.
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def _is_ours(element: ET.Element) -> bool:
    # No namespace is what libvirt's metadata() returns; any other namespace is another
    # application's element that happens to share the local name.
    tag = element.tag
    if not isinstance(tag, str) or _local(tag) != "instance":
        return False
    return not tag.startswith("{") or tag.startswith(f"{{{METADATA_URI}}}")


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _parse(text: str) -> ET.Element | None:
    try:
        return ET.fromstring(text)  # noqa: S314 - libvirt's own output, not untrusted input
    except ET.ParseError:
        return None


def _parse_strict(domain_xml: str) -> ET.Element:
    root = _parse(domain_xml)
    if root is None or root.tag != "domain":
        raise ValueError("expected a libvirt domain XML")
    return root


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, attrs)
    element.text = text
    return element
