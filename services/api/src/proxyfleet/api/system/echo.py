"""GET /echo: the caller's address as JSON, `{"ip": "..."}` (no token).

Health's probes fetch it through each proxy, so the address it answers is the proxy's exit
address as this server sees it (docs/egress.md, "The echo endpoint": where it must run to
see the public address). Behind a load balancer the peer is the balancer: the caller is
read from X-Forwarded-For (`proxyfleet.api.http.forwarded`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from litestar import Request, Response, Router, get
from litestar.datastructures import CacheControlHeader

from proxyfleet.api.http.forwarded import caller_address, parse_trusted


class Echo(msgspec.Struct, kw_only=True):
    ip: str
    """The caller's address ("" when it cannot be told)."""


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
