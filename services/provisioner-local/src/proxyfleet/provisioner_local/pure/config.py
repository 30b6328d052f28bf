"""The local provider's settings (`local:` of a provider entry): proxies as processes on
this machine, and their placement. Pure: no I/O; `check_local_provider` raises ConfigError
naming the key."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Literal

import msgspec

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.domain.squid import check_source_ranges
from proxyfleet.common.providers import INVALID_PLACEMENT, Port, ProviderConfig
from proxyfleet.provisioner_local.pure.egress_addresses import (
    DEFAULT_EGRESS_RANGE,
    check_egress_range,
    placement_address,
)


class LocalSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A proxy is a real proxy process on this machine."""

    state_dir: str = ".dev/local-proxies"
    """Where each proxy's config, credentials and pid live (one folder per proxy)."""
    bind_host: str = "127.0.0.1"
    """IPv4 address the proxy processes listen on; 0.0.0.0 (every interface) needs
    advertise_host."""
    advertise_host: str = ""
    """IPv4 address the API hands out for the proxies: bind_host's (the default), or, when
    bind_host is 0.0.0.0, a non-loopback address of this machine, given explicitly."""
    port_range: tuple[Port, Port] = (20000, 29999)
    """Ports handed to proxy processes."""
    engine: Literal["auto", "squid", "proxy.py"] = "auto"
    """auto: Squid when installed, else proxy.py."""
    connect_ports: list[Port] = msgspec.field(default_factory=lambda: [443])
    """Destination ports CONNECT may reach (add the dev HTTPS target's port)."""
    source_ranges: list[str] = msgspec.field(default_factory=list)
    """Client networks (CIDR) Squid accepts; empty: any (proxy.py does not enforce it)."""
    egress_range: str = DEFAULT_EGRESS_RANGE
    """127/8 network each Squid proxy leaves from for loopback destinations, one address per
    port (see egress_addresses); "": all leave from 127.0.0.1 (docs/egress.md)."""


def _ipv4(value: str, where: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(value)
    except ValueError:
        raise ConfigError(
            f"{where}: expected an IPv4 address such as 127.0.0.1, got {value!r}"
        ) from None


class LocalProviderConfig(ProviderConfig, tag="local"):
    """A provider entry of type local."""

    local: LocalSettings


class LocalPlacementValidator:
    """Local proxies read one key, `egress_address`: a 127/8 address to leave from."""

    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        try:
            placement_address(placement)
        except ValueError as exc:
            raise InvalidInput(
                f"provider {provider.name!r}: {exc}", code=INVALID_PLACEMENT
            ) from None


def check_local_provider(entry: LocalProviderConfig, where: str) -> None:
    """ConfigError naming `where`.local.<key> for what the types alone do not say."""
    where = f"{where}.local"
    _check_addresses(entry.local, where)
    try:
        check_source_ranges(entry.local.source_ranges)
    except ValueError as exc:
        raise ConfigError(f"{where}.source_ranges: {exc}") from None


def _check_addresses(local: LocalSettings, where: str) -> None:
    """The proxies must listen where the API sends clients, and nowhere else: a wildcard
    bind handed out as 127.0.0.1 exposed them on every interface unannounced."""
    if local.port_range[0] > local.port_range[1]:
        raise ConfigError(f"{where}.port_range: expected [low, high] with low <= high")
    try:
        check_egress_range(local.egress_range, local.port_range)
    except ValueError as exc:
        raise ConfigError(f"{where}.egress_range: {exc}") from None
    bind = _ipv4(local.bind_host, f"{where}.bind_host")
    if not bind.is_unspecified:
        if local.advertise_host and _ipv4(local.advertise_host, f"{where}.advertise_host") != bind:
            raise ConfigError(
                f"{where}.advertise_host: expected bind_host's address {bind} (the proxies"
                f" listen only there) or nothing, got {local.advertise_host!r}"
            )
        return
    if not local.advertise_host:
        raise ConfigError(
            f"{where}.advertise_host: required when bind_host is {bind} (every interface):"
            " expected the non-loopback IPv4 address clients reach the proxies at"
        )
    advertised = _ipv4(local.advertise_host, f"{where}.advertise_host")
    if advertised.is_loopback or advertised.is_unspecified:
        raise ConfigError(
            f"{where}.advertise_host: expected a non-loopback address with bind_host {bind}"
            f" (or bind_host: {advertised} alone), got {local.advertise_host!r}"
        )
