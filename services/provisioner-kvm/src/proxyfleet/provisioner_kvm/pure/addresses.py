"""The VM's IPv4 address, from what libvirt reports (guest agent or DHCP leases)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

IP_ADDR_TYPE_IPV4 = 0
"""libvirt's VIR_IP_ADDR_TYPE_IPV4 (1 is IPv6)."""


def address_from_agent(interfaces: Mapping[str, Mapping[str, Any]], mac: str | None) -> str | None:
    """The IPv4 address of the VM's interface, from `interfaceAddresses(SRC_AGENT)`.

    With `mac`, only the interface with that hardware address counts (a guest may have
    bridges or containers with addresses of their own); without it, the first interface
    that is not loopback. Loopback and link-local addresses never count.
    """
    wanted = mac.lower() if mac else None
    for name, iface in interfaces.items():
        hwaddr = iface.get("hwaddr")
        hwaddr = hwaddr.lower() if isinstance(hwaddr, str) else None
        if wanted is not None and hwaddr != wanted:
            continue
        if wanted is None and (name == "lo" or hwaddr in (None, "00:00:00:00:00:00")):
            continue
        addrs = iface.get("addrs") or []
        found = _first_usable(a.get("addr") for a in addrs if _is_ipv4_entry(a))
        if found is not None:
            return found
    return None


def address_from_leases(leases: Sequence[Mapping[str, Any]], mac: str | None) -> str | None:
    """The IPv4 address of the VM from a network's `DHCPLeases()`: its newest lease wins.

    A VM that rebooted or renewed may hold an old lease next to the current one; the one
    that expires last is the one it got last.
    """
    wanted = mac.lower() if mac else None
    candidates = [
        lease
        for lease in leases
        if _is_ipv4_entry(lease) and (wanted is None or str(lease.get("mac", "")).lower() == wanted)
    ]
    candidates.sort(key=_expiry, reverse=True)
    return _first_usable(lease.get("ipaddr") for lease in candidates)


def _is_ipv4_entry(entry: Mapping[str, Any]) -> bool:
    return bool(entry.get("type", IP_ADDR_TYPE_IPV4) == IP_ADDR_TYPE_IPV4)


def _expiry(lease: Mapping[str, Any]) -> int:
    value = lease.get("expirytime")
    return value if isinstance(value, int) else 0


def _first_usable(values: Iterable[object]) -> str | None:
    for value in values:
        if not isinstance(value, str):
            continue
        try:
            ip = ipaddress.ip_address(value)
        except ValueError:
            continue
        if ip.version == 4 and not (
            ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast
        ):
            return str(ip)
    return None
