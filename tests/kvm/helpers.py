"""Helpers of the KVM tests (plain functions; the fixtures are in conftest)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import libvirt
import msgspec

from proxyfleet.provisioner_kvm.pure.config import KvmHost
from proxyfleet.provisioner_kvm.pure.domain_xml import mac_from_domain_xml

TEST_DRIVER_URI = "test:///default"
"""libvirt's built-in test driver: a fake hypervisor in the client library."""
TEST_DRIVER_HOST = KvmHost(
    name="t1",
    zone="test-a",
    ssh_address="unused",
    ssh_key_file="unused",
    host_key="ssh-ed25519 unused",
    storage_pool="default-pool",
    network="default",
    domain_type="qemu",
)
"""A host whose SSH settings are never used: the test driver is reached directly."""


def kvm_provider(name: str, host: KvmHost, **kvm: Any) -> dict[str, Any]:
    """One `providers:` entry of type kvm serving `host`'s zone with `host` (as a dict, for
    yaml.safe_dump); `kvm` holds the rest of the kvm section (images, default_image, ...)."""
    return {
        "name": name,
        "type": "kvm",
        "zones": [host.zone],
        "kvm": {"hosts": [msgspec.to_builtins(host)], **kvm},
    }


def make_image(path: Path) -> Path:
    """An empty 64 MiB qcow2: no guest boots from it, so no guest ever asks for an address."""
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), "64M"], check=True)
    return path


def domain_active(uri: str, name: str) -> bool:
    conn = libvirt.open(uri)
    try:
        return bool(conn.lookupByName(name).isActive())
    except libvirt.libvirtError:
        return False
    finally:
        conn.close()


def domain_mac(uri: str, name: str) -> str:
    conn = libvirt.open(uri)
    try:
        mac = mac_from_domain_xml(conn.lookupByName(name).XMLDesc(0))
    finally:
        conn.close()
    assert mac is not None, f"domain {name} has no interface"
    return mac


def lease_file(bridge: str) -> Path:
    """Where libvirt reads the DHCP leases of the network on `bridge` (its leases helper
    writes them there as dnsmasq hands them out)."""
    return Path(f"/var/lib/libvirt/dnsmasq/{bridge}.status")


def grant_dhcp_leases(bridge: str, leases: dict[str, str]) -> None:
    """Play the guests' DHCP: add a lease (MAC -> IPv4 address) for each to the network's
    lease file, which libvirt's `DHCPLeases()` then reports as dnsmasq's."""
    path = lease_file(bridge)
    try:
        entries: list[dict[str, Any]] = json.loads(path.read_text() or "[]")
    except (OSError, ValueError):
        entries = []
    expiry = int(time.time()) + 3600
    entries += [
        {"ip-address": ip, "mac-address": mac, "hostname": "", "expiry-time": expiry}
        for mac, ip in leases.items()
    ]
    path.write_text(json.dumps(entries))
