"""The `kvm:` section of a provider (proxies as VMs on the operator's libvirt hosts) and
its checks. Pure: no I/O and no libvirt import."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain.squid import check_source_ranges
from proxyfleet.common.providers import Name, Port, ProviderConfig, Seconds, Zone


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


Firmware = Literal["uefi", "bios"]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"^([0-9a-f]{64})?$")]


class KvmImage(_Strict, kw_only=True):
    """A base image: downloaded once, uploaded into each host's pool, shared by overlays."""

    url: str
    """http(s):// or file:// URL of the image (qcow2 or raw)."""
    sha256: Sha256 = ""
    """Expected SHA-256 of the file (lowercase hex); "" skips the check."""
    firmware: Firmware = "uefi"
    """How the image boots: UEFI (OVMF) or legacy BIOS."""
    format: Literal["qcow2", "raw"] = "qcow2"
    """Disk format of the file; the per-VM overlay names it as its backing format."""


class KvmHost(_Strict, kw_only=True):
    """One hypervisor, reached over SSH; nothing but sshd is exposed on it."""

    name: Name
    """Host name in logs, metrics and resource ids."""
    zone: Zone
    """The zone this host serves; a proxy's zone picks the host."""
    ssh_address: str
    """host or host:port of sshd."""
    ssh_user: str = "root"
    """SSH user; it needs access to the libvirt socket."""
    ssh_key_file: str
    """Private key file (a mounted secret in production)."""
    host_key: str
    """The host's pinned public key, as in known_hosts: "ssh-ed25519 AAAA..."."""
    libvirt_socket: str = "/var/run/libvirt/libvirt-sock"
    """Path of libvirtd's read-write unix socket on the host."""
    storage_pool: str = "default"
    """Pool that holds base images, overlays and seed ISOs."""
    network: str = "default"
    """libvirt network the VMs attach to."""
    domain_type: Literal["kvm", "qemu"] = "kvm"
    """kvm: hardware virtualisation; qemu: software emulation (TCG), slow but anywhere."""
    max_proxies: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Most Proxyfleet VMs this host runs (any installation's count: they share it); a
    create goes to the host of its zone with the most room left, and never to one at its
    limit. None: no limit (such a host always has the most room)."""


class KvmSettings(_Strict, kw_only=True):
    """A proxy is a VM on one of the operator's libvirt hosts."""

    hosts: list[KvmHost]
    """The hypervisors; each serves one zone (several hosts may serve the same zone)."""
    images: dict[str, KvmImage]
    """Base images by key; a proxy's placement may name one (`image`)."""
    default_image: str
    """Key of the image used when the placement names none."""
    vcpus: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1
    """Virtual CPUs per VM."""
    memory_mib: Annotated[int, msgspec.Meta(ge=256, le=262144)] = 1024
    """Memory per VM (MiB)."""
    disk_gib: Annotated[int, msgspec.Meta(ge=1, le=2048)] = 10
    """Virtual size of each VM's overlay disk (GiB)."""
    proxy_port: Port = 3128
    """Port Squid listens on inside each VM."""
    connect_ports: list[Port] = msgspec.field(default_factory=lambda: [443])
    """Destination ports CONNECT may reach."""
    deny_private_destinations: bool = True
    """Squid in the VMs refuses private destinations (RFC 1918, CGNAT, ULA): the LAN behind
    the hypervisors. Turn off only in a lab whose test target lives on such a network."""
    source_ranges: list[str] = msgspec.field(default_factory=list)
    """Client networks (CIDR) Squid in the VMs accepts; empty: any."""
    image_cache_dir: str = ".cache/proxyfleet-images"
    """Where downloaded images are kept on the provisioner before upload."""
    address_timeout: Seconds = 300.0
    """How long one create waits for the guest to report its address."""
    host_retry_after: Seconds = 30.0
    """A host that could not be reached is left out of placement this long (its zone's
    creates go to the zone's other hosts), then tried again."""


class KvmProviderConfig(ProviderConfig, tag="kvm"):
    """A provider entry of type kvm."""

    kvm: KvmSettings


def check_kvm_provider(entry: KvmProviderConfig, where: str) -> None:
    """ConfigError naming `where`.kvm.<key> for what the types alone do not say."""
    kvm, zones, where = entry.kvm, entry.zones, f"{where}.kvm"
    if not kvm.hosts:
        raise ConfigError(f"{where}.hosts: expected at least one host")
    names: set[str] = set()
    for i, host in enumerate(kvm.hosts):
        if host.name in names:
            raise ConfigError(f"{where}.hosts[{i}].name: duplicate host name {host.name!r}")
        names.add(host.name)
        if host.zone not in zones:
            raise ConfigError(
                f"{where}.hosts[{i}].zone: {host.zone!r} is not one of the provider's zones"
            )
        if len(host.host_key.split()) < 2:
            raise ConfigError(
                f"{where}.hosts[{i}].host_key: expected a public key like 'ssh-ed25519 AAAA...'"
            )
    served = {h.zone for h in kvm.hosts}
    if missing := [z for z in zones if z not in served]:
        raise ConfigError(f"{where}.hosts: no host serves zone(s) {', '.join(missing)}")
    if kvm.default_image not in kvm.images:
        raise ConfigError(f"{where}.default_image: {kvm.default_image!r} is not a key of images")

    try:
        check_source_ranges(kvm.source_ranges)
    except ValueError as exc:
        raise ConfigError(f"{where}.source_ranges: {exc}") from None
