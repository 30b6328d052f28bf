"""Who the caller is behind load balancers: X-Forwarded-For, believed only from the
trusted proxies' CIDRs (--echo-trusted-proxy), read right to left past every trusted hop."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from proxyfleet.common.domain.egress import normalize

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_trusted(cidrs: Sequence[str]) -> tuple[Network, ...]:
    """The trusted proxies' networks; ValueError naming a bad one."""
    return tuple(ipaddress.ip_network(c.strip(), strict=False) for c in cidrs)


def _trusted(ip: str, trusted: Sequence[Network]) -> bool:
    address = ipaddress.ip_address(ip)
    return any(address in net for net in trusted)


def caller_address(peer: str, forwarded_for: str, trusted: Sequence[Network]) -> str:
    """The peer's address, or, when the peer is a trusted proxy, the right-most address of
    X-Forwarded-For that is not a trusted proxy (what the left-most says, any client may
    forge; when every hop is trusted, the left-most). Normalized; "" when none can be
    read."""
    address = normalize(peer)
    if not address or not forwarded_for.strip() or not _trusted(address, trusted):
        return address
    for hop in reversed(forwarded_for.split(",")):
        address = normalize(hop.strip())
        if not address:
            return ""  # garbage in the chain: whoever wrote it is not trusted
        if not _trusted(address, trusted):
            break
    return address  # every hop trusted: the left-most is the caller
