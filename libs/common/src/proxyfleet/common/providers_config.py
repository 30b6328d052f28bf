"""The providers config file: parsed strictly, with errors that name file, key and expectation.

Pure: `parse_providers_config(text, path)` does no I/O; `load_providers_config(path)` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import msgspec
import yaml

from proxyfleet.common import strict_yaml
from proxyfleet.common.egress import EgressSettings
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.gcp_config import GcpSettings, check_gcp
from proxyfleet.common.k8s_config import K8sSettings, check_kubernetes
from proxyfleet.common.local_config import LocalSettings, check_local
from proxyfleet.common.pool_spec import PoolName, PoolSpec, parse_pools
from proxyfleet.common.squid import check_source_ranges

Name = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,30}$")]
Zone = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]


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


class ProviderConfig(_Strict):
    name: Name
    """Instance name; intents for it go to proxyfleet.intents.<name>.*"""
    type: Literal["local", "kvm", "gcp", "kubernetes"]
    zones: list[Zone]
    """Zones this instance serves; a proxy's zone must be one of them."""
    boot_timeout: Seconds = 120.0
    """A proxy not ready this long after provisioning fails."""
    max_proxies: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Most proxies this instance may have (failed and deleted ones do not count); a
    create past it is refused (409). None: no limit."""
    egress: EgressSettings = msgspec.field(default_factory=EgressSettings)
    """Exclusivity by exit address and whether a proxy needs a known one to be ready
    (docs/egress.md)."""
    local: LocalSettings | None = None
    kvm: KvmSettings | None = None
    gcp: GcpSettings | None = None
    kubernetes: K8sSettings | None = None


class ProvidersConfig(_Strict):
    providers: list[ProviderConfig]
    pools: dict[PoolName, PoolSpec] = {}
    """Pools kept from this file, by name (docs/pools.md): applied by the pool controller
    at every start, owned by the file (the API refuses to change them); checked against
    the providers by `pool_checks.check_config_pools`."""

    def get(self, name: str) -> ProviderConfig:
        for p in self.providers:
            if p.name == name:
                return p
        raise KeyError(name)


_TYPE_SECTION = {"local": "local", "kvm": "kvm", "gcp": "gcp", "kubernetes": "kubernetes"}


def parse_providers_config(text: str | bytes, path: str) -> ProvidersConfig:
    try:
        data = strict_yaml.load(text)
    except strict_yaml.DuplicateKey as exc:
        raise ConfigError(f"{path}: {exc}; expected each key once") from None
    except (yaml.YAMLError, ValueError, LookupError, AttributeError) as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    pools = data.pop("pools", None) if isinstance(data, dict) else None
    try:
        cfg = msgspec.convert(data, ProvidersConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(path, str(exc))) from None
    cfg.pools = parse_pools(pools, path)
    _check_semantics(cfg, path)
    return cfg


def load_providers_config(path: str) -> ProvidersConfig:
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the providers config: {exc.strerror}") from None
    return parse_providers_config(text, path)


def _explain(path: str, message: str) -> str:
    """msgspec says `Expected int, got str - at `$.providers[0].zones``: name the key."""
    where, what = strict_yaml.located(message)
    if what == message:
        return f"{path}: {message}"
    return f"{path}: key {where or '(top level)'}: {what}"


def _check_semantics(cfg: ProvidersConfig, path: str) -> None:
    seen: set[str] = set()
    if not cfg.providers:
        raise ConfigError(f"{path}: key providers: expected at least one provider")
    for i, p in enumerate(cfg.providers):
        where = f"{path}: key providers[{i}]"
        if p.name in seen:
            raise ConfigError(f"{where}.name: duplicate provider name {p.name!r}")
        seen.add(p.name)
        if not p.zones:
            raise ConfigError(f"{where}.zones: expected at least one zone")
        if dup := next((z for i, z in enumerate(p.zones) if z in p.zones[:i]), None):
            raise ConfigError(f"{where}.zones: zone {dup!r} listed twice; expected each once")
        section = _TYPE_SECTION.get(p.type)
        if section is None:
            raise ConfigError(
                f"{where}.type: provider type {p.type!r} is not available in this release"
            )
        if getattr(p, section) is None:
            raise ConfigError(f"{where}.{section}: required for type {p.type!r}")
        if p.local is not None:
            check_local(p.local, f"{where}.local")
        if p.kvm is not None:
            _check_kvm(p.kvm, p.zones, f"{where}.kvm")
        if p.gcp is not None:
            check_gcp(p.gcp, p.zones, f"{where}.gcp")
        if p.kubernetes is not None:
            check_kubernetes(p.kubernetes, p.zones, f"{where}.kubernetes")
        for key, ranges in (("local", p.local), ("kvm", p.kvm)):
            try:
                check_source_ranges(ranges.source_ranges if ranges else [])
            except ValueError as exc:
                raise ConfigError(f"{where}.{key}.source_ranges: {exc}") from None


def _check_kvm(kvm: KvmSettings, zones: list[str], where: str) -> None:
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


def load_provider(path: str, name: str, provider_type: str) -> ProviderConfig:
    """The instance `name` of the config file at `path`, which must be of `provider_type`."""
    config = load_providers_config(path)
    try:
        found = config.get(name)
    except KeyError:
        names = ", ".join(p.name for p in config.providers)
        raise ConfigError(f"{path}: no provider named {name!r} (found: {names})") from None
    if found.type != provider_type:
        raise ConfigError(
            f"{path}: provider {name!r} is of type {found.type!r}, not {provider_type!r}"
        )
    return found
