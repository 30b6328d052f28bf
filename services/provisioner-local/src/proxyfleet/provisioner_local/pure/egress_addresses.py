"""Local proxies' own loopback exit addresses: one 127.x.y.z per proxy, derived from its port.

Pure, no I/O. Shared by the providers config check (`check_egress_range`), the API's
placement check (the type's validator) and the local provisioner (`placement_address`),
and the provisioner's choice of address (`address_for_port`), so the rule is written once.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
DEFAULT_EGRESS_RANGE = "127.77.0.0/16"
"""The default of the local provider's `egress_range`: 65,534 addresses, one per port."""
EGRESS_ADDRESS_KEY = "egress_address"
"""The placement key that gives a local proxy an outgoing address of the user's choice (two
proxies given the same one share it, as proxies behind one NAT would)."""
PLACEMENT_KEYS = frozenset({EGRESS_ADDRESS_KEY})


def check_egress_range(egress_range: str, port_range: tuple[int, int]) -> None:
    """ValueError unless `egress_range` is "" or a 127/8 network with an address for every
    port of `port_range` (its first and last addresses are not handed out)."""
    if not egress_range:
        return
    network = _network(egress_range)
    ports = port_range[1] - port_range[0] + 1
    if network.num_addresses - 2 < ports:
        raise ValueError(
            f"{egress_range} has {max(network.num_addresses - 2, 0)} usable addresses, fewer"
            f" than the {ports} ports of port_range: expected a larger network"
            f" (a /{_prefix_for(ports)} or larger) or a smaller port_range"
        )


def address_for_port(egress_range: str, port_range: tuple[int, int], port: int) -> str:
    """The exit address of the proxy on `port`: the network's (port - low + 1)-th address,
    so it is unique per port and the same after every restart; "" when `egress_range` is ""
    (the kernel's choice: 127.0.0.1 for every proxy)."""
    if not egress_range:
        return ""
    low, high = port_range
    if not low <= port <= high:
        raise ValueError(f"port {port} is outside port_range [{low}, {high}]")
    network = _network(egress_range)
    number = port - low + 1
    if number >= network.num_addresses - 1:  # the config check refuses such a range
        raise ValueError(f"port {port} has no address in {egress_range}: it is too small")
    return str(network.network_address + number)


def placement_address(placement: Mapping[str, str]) -> str:
    """The `egress_address` a placement names ("" for none); ValueError naming the key for
    an unknown key or an address outside 127/8."""
    if unknown := sorted(set(placement) - PLACEMENT_KEYS):
        raise ValueError(
            f"placement: unknown key(s) {', '.join(unknown)}; expected only {EGRESS_ADDRESS_KEY}"
        )
    value = placement.get(EGRESS_ADDRESS_KEY, "")
    if not value:
        return ""
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        address = None
    if address is None or address not in LOOPBACK:
        raise ValueError(
            f"placement.{EGRESS_ADDRESS_KEY}: expected an IPv4 address in {LOOPBACK}"
            f" such as 127.77.9.9, got {value!r}"
        )
    return str(address)


def _network(egress_range: str) -> ipaddress.IPv4Network:
    try:
        network = ipaddress.IPv4Network(egress_range)
    except ValueError:
        raise ValueError(
            f"expected an IPv4 network (CIDR, host bits zero) inside {LOOPBACK} such as"
            f" 127.77.0.0/16, got {egress_range!r}"
        ) from None
    if not network.subnet_of(LOOPBACK):
        raise ValueError(f"expected a network inside {LOOPBACK}, got {egress_range!r}")
    return network


def _prefix_for(ports: int) -> int:
    """The longest prefix whose network has an address for `ports` ports."""
    prefix = 32
    while prefix > 8 and 2 ** (32 - prefix) - 2 < ports:
        prefix -= 1
    return prefix
