"""GET /echo: the caller's address as JSON, `{"ip": "..."}` (no token).

Health's probes fetch it through each proxy, so the address it answers is the proxy's exit
address as this server sees it (docs/egress.md, "The echo endpoint": where it must run to
see the public address). Behind a load balancer the peer is the balancer: X-Forwarded-For
is believed only from the CIDRs of --echo-trusted-proxy, read right to left past every
trusted hop."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

import msgspec
from litestar import Request, Response, Router, get
from litestar.datastructures import CacheControlHeader

from proxyfleet.common.egress import normalize

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Echo(msgspec.Struct, kw_only=True):
    ip: str
    """The caller's address ("" when it cannot be told)."""


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


NO_STORE = CacheControlHeader(no_store=True)


def echo_router(trusted_cidrs: Sequence[str] = ()) -> Router:
    trusted = parse_trusted(trusted_cidrs)

    @get("/echo", tags=["system"], cache_control=NO_STORE)
    async def echo(request: Request[Any, Any, Any]) -> Response[Echo]:
        """The caller's address, as health's probe target: `{"ip": "<address>"}`. No token.
        Through a proxy, the proxy's exit address. X-Forwarded-For counts only from the
        trusted proxies (`--echo-trusted-proxy`)."""
        peer = request.client.host if request.client else ""
        ip = caller_address(peer, request.headers.get("x-forwarded-for", ""), trusted)
        return Response(Echo(ip=ip))

    return Router(path="/", route_handlers=[echo])
