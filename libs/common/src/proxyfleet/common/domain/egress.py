"""Egress identity: the address a proxy's traffic leaves from, and the unit leases hold.

Pure, no I/O: health normalizes what the echo target reported (`normalize`) and derives the
network (`network`); the grant script reads both fields from the proxy (`egress_ip`,
`egress_net`) and holds the unit its exclusivity mode names. The mode names and the
network prefixes are written here once; the Lua scripts take them as arguments.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

import msgspec

Exclusive = Literal["ip", "subnet", "none"]
"""What a lease holds exclusively beyond its proxy: its exit address (`ip`), the address's
network (`subnet`: an IPv4 /24 or an IPv6 /64, for targets that ban by network), or nothing
(`none`: two proxies on one address may be leased at once)."""

EXCLUSIVE_MODES: tuple[Exclusive, ...] = ("ip", "subnet", "none")
IPV4_PREFIX = 24
IPV6_PREFIX = 64


class EgressSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """How a provider's proxies are leased by their exit address (docs/egress.md)."""

    exclusive: Exclusive = "ip"
    """The unit a lease holds exclusively: ip, subnet or none. A pool may name its own."""
    require_ip: bool = False
    """A proxy is not ready until health knows its exit address. Off by default because
    a probe target that does not echo the caller's address (any plain HTTPS page) leaves
    every address unknown; a proxy whose address is unknown is granted then, holding no
    address. Turn it on once the health target is an echo endpoint (the API's /echo)."""


def normalize(raw: object) -> str:
    """The canonical text of an IP address (`::ffff:1.2.3.4` as `1.2.3.4`), or "" for
    anything that is not one (an echo target that answers garbage)."""
    if not isinstance(raw, str) or not raw or len(raw) > 64:
        return ""
    try:
        address = ipaddress.ip_address(raw.strip())
    except ValueError:
        return ""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def network(ip: str) -> str:
    """The network a normalized address belongs to for `subnet` exclusivity: its /24
    (IPv4) or /64 (IPv6), as CIDR text; "" for ""."""
    if not ip:
        return ""
    address = ipaddress.ip_address(ip)
    prefix = IPV4_PREFIX if address.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


REVOKED_EGRESS_CHANGED = "egress_changed"
"""The reason stored on a lease revoked because its proxy's exit address changed."""


@dataclass(frozen=True, slots=True)
class EgressStep:
    """What one probe does to a proxy's address: the confirmed address after it, the
    candidate still waiting for confirmation and how many probes in a row saw it."""

    ip: str
    pending: str
    pending_n: int
    changed: bool
    """The confirmed address changed (first address included): the egress script runs."""
    dirty: bool
    """Something must be written (a pending-only step rides on the probe's streak write)."""


def decide_egress(
    current: str, pending: str, pending_n: int, observed: str, confirm_after: int
) -> EgressStep:
    """Hysteresis on the exit address (all addresses normalized, "" unknown).

    An unknown observation changes nothing. Seeing the confirmed address again clears any
    candidate, so an A->B->A flap starts over and never confirms B. A first address is
    confirmed at once (nothing to revoke). A new address is confirmed once `confirm_after`
    probes in a row saw it."""
    if not observed:
        return EgressStep(current, pending, pending_n, changed=False, dirty=False)
    if observed == current:
        dirty = bool(pending) or pending_n != 0
        return EgressStep(current, "", 0, changed=False, dirty=dirty)
    if not current:
        return EgressStep(observed, "", 0, changed=True, dirty=True)
    seen = pending_n + 1 if observed == pending else 1
    if seen >= confirm_after:
        return EgressStep(observed, "", 0, changed=True, dirty=True)
    return EgressStep(current, observed, seen, changed=False, dirty=True)
