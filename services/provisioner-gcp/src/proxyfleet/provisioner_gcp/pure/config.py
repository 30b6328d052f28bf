"""The `gcp:` section of a provider (proxies as GCE VMs), its checks, and its placement.

Pure: no I/O and no Google import. The providers file parses the section strictly and
calls `check_gcp_provider`; the API asks `GcpPlacementValidator` (the type's validator,
`provider_type.PROVIDER_TYPE`) before storing a proxy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

import msgspec

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.domain.squid import check_source_ranges
from proxyfleet.common.providers import INVALID_PLACEMENT, Port, ProviderConfig, Seconds

GceZone = Annotated[str, msgspec.Meta(pattern=r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")]
"""A GCE zone name such as europe-west1-b."""

_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_TAG = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_PROJECT = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$|^[a-z0-9.:-]+$")
RESERVED_LABEL_PREFIX = "proxyfleet-"
"""Labels the provider sets itself (proxy id, installation, provider, port)."""

PIN_ZONE = "pin_zone"
"""Placement key: "true" keeps a proxy in its zone when that zone has no capacity (it
retries later); unpinned proxies move to another zone of the provider."""


class GcpSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A proxy is a GCE VM running Squid from cloud-init, reached on its external IP."""

    project: str
    """Project the VMs, disks and firewall rule live in."""
    zones: dict[str, GceZone]
    """Provider zone -> GCE zone (every zone of the provider must be mapped)."""
    source_ranges: list[str]
    """Client networks (CIDR) that may reach the proxy port: the firewall rule's source
    ranges, and Squid's own client ACL."""
    machine_type: str = "e2-micro"
    """Machine type of each VM (a name like e2-micro, resolved in the VM's zone)."""
    image: str = ""
    """An explicit image (projects/<p>/global/images/<name>); "" uses image_family."""
    image_family: str = "ubuntu-2404-lts-amd64"
    """Image family resolved at create time (the newest image of the family) when `image`
    is empty. It must have cloud-init (Ubuntu images do; Debian's GCE images do not)."""
    image_project: str = "ubuntu-os-cloud"
    """Project of image_family."""
    network: str = "global/networks/default"
    """VPC network of the VMs (and of the firewall rule)."""
    subnetwork: str = ""
    """Subnetwork (regions/<r>/subnetworks/<s>); "" lets an auto-mode network choose."""
    spot: bool = True
    """Spot VMs (provisioning model SPOT, termination action DELETE): cheaper, and Google
    may preempt them at any time (the proxy then fails with that reason)."""
    disk_size_gb: Annotated[int, msgspec.Meta(ge=10, le=65536)] = 10
    """Boot disk size (GB); deleted with the VM."""
    disk_type: str = "pd-balanced"
    """Boot disk type (pd-standard, pd-balanced, pd-ssd)."""
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    """Extra labels on every VM and disk (GCE label syntax; proxyfleet-* is reserved)."""
    network_tags: list[str] = msgspec.field(default_factory=list)
    """Extra network tags on every VM (the provider adds the firewall rule's own tag)."""
    service_account: str = ""
    """Service account e-mail attached to the VMs; "" attaches none (the proxies need no
    Google API)."""
    credentials_file: str = ""
    """A service account key file (a mounted Secret); "" uses Application Default
    Credentials (Workload Identity on GKE, the metadata server on GCE, gcloud locally)."""
    api_endpoint: str = ""
    """Compute API endpoint; "" is Google's. Tests point it at their fake (http://...)."""
    anonymous: bool = False
    """Send no credentials (only with an http:// api_endpoint: the test fake)."""
    external_ip: bool = True
    """Each VM gets an ephemeral external IP: the address it is reached at, and its own exit
    address (no two proxies share one). False: no external IP; the proxy is reached at its
    internal address (the control plane and its clients must be inside the VPC) and leaves
    through the network's Cloud NAT, whose few addresses all such VMs share (docs/egress.md:
    exclusivity by `ip` then leases one proxy per NAT address at a time)."""
    proxy_port: Port = 3128
    """Port Squid listens on in each VM (and the firewall rule opens)."""
    connect_ports: list[Port] = msgspec.field(default_factory=lambda: [443])
    """Destination ports CONNECT may reach."""
    deny_private_destinations: bool = True
    """Squid refuses private destinations (the VPC behind the proxy)."""
    max_operations_in_flight: Annotated[int, msgspec.Meta(ge=1, le=500)] = 16
    """Compute API mutations (and their operations) one replica has open at once."""
    operation_timeout: Seconds = 300.0
    """How long one create or delete waits for its operation before retrying later."""
    sweep_min_age: Seconds = 3600.0
    """Orphan disks, addresses and firewall rules younger than this are left alone."""
    sweep_interval: Seconds = 300.0
    """Least time between two sweeps (they run when GC asks for the managed resources)."""
    sweep_dry_run: bool = False
    """Report orphans the sweeper would delete without deleting them."""


class GcpProviderConfig(ProviderConfig, tag="gcp"):
    """A provider entry of type gcp."""

    gcp: GcpSettings


def check_gcp_provider(entry: GcpProviderConfig, where: str) -> None:
    """ConfigError naming `where`.gcp.<key> for what the types alone do not say."""
    gcp, zones, where = entry.gcp, entry.zones, f"{where}.gcp"
    if not _PROJECT.fullmatch(gcp.project):
        raise ConfigError(f"{where}.project: expected a GCP project id, got {gcp.project!r}")
    if missing := [z for z in zones if z not in gcp.zones]:
        raise ConfigError(f"{where}.zones: no GCE zone for provider zone(s) {', '.join(missing)}")
    if extra := [z for z in gcp.zones if z not in zones]:
        raise ConfigError(f"{where}.zones: {', '.join(extra)} not among the provider's zones")
    by_gce: dict[str, list[str]] = {}
    for zone, gce_zone in gcp.zones.items():
        by_gce.setdefault(gce_zone, []).append(zone)
    if shared := {g: zs for g, zs in by_gce.items() if len(zs) > 1}:
        # A create's failover tries the provider's other zones: one GCE zone under two
        # names would be retried with the same request id, and grants by zone would
        # tell apart proxies that are not apart.
        gce_zone, names = next(iter(shared.items()))
        raise ConfigError(
            f"{where}.zones: {' and '.join(names)} name the same GCE zone {gce_zone};"
            " give each provider zone its own"
        )
    if not gcp.source_ranges:
        raise ConfigError(f"{where}.source_ranges: expected at least one network (CIDR)")
    try:
        check_source_ranges(gcp.source_ranges)
    except ValueError as exc:
        raise ConfigError(f"{where}.source_ranges: {exc}") from None
    if not gcp.image and not gcp.image_family:
        raise ConfigError(f"{where}.image: expected an image, or an image_family")
    for key, value in gcp.labels.items():
        if key.startswith(RESERVED_LABEL_PREFIX):
            raise ConfigError(
                f"{where}.labels.{key}: the prefix {RESERVED_LABEL_PREFIX} is reserved"
            )
        if not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value):
            raise ConfigError(
                f"{where}.labels.{key}: expected GCE label syntax (lowercase letters, digits,"
                " '_' and '-'; keys start with a letter; at most 63 characters)"
            )
    for i, tag in enumerate(gcp.network_tags):
        if not _TAG.fullmatch(tag):
            raise ConfigError(f"{where}.network_tags[{i}]: {tag!r} is not a valid network tag")
    if gcp.anonymous and not gcp.api_endpoint.startswith("http://"):
        raise ConfigError(f"{where}.anonymous: only with an http:// api_endpoint (a test fake)")
    if gcp.anonymous and gcp.credentials_file:
        raise ConfigError(f"{where}.anonymous: excludes credentials_file")
    if not gcp.connect_ports:
        raise ConfigError(f"{where}.connect_ports: expected at least one port")


class GcpPlacementValidator:
    """A gcp proxy's placement takes only `pin_zone` ("true" or "false")."""

    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        for key, value in placement.items():
            if key != PIN_ZONE:
                raise InvalidInput(
                    f"placement key {key!r}: a gcp provider takes only {PIN_ZONE}",
                    code=INVALID_PLACEMENT,
                )
            if value not in ("true", "false"):
                raise InvalidInput(
                    f"placement {PIN_ZONE}: expected 'true' or 'false', got {value!r}",
                    code=INVALID_PLACEMENT,
                )


def is_pinned(placement: Mapping[str, str]) -> bool:
    return placement.get(PIN_ZONE) == "true"
