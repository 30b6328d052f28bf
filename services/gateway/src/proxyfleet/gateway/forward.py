"""The heads of a relayed connection as the gateway rewrites them: the ids a client is
told, the request a plain-HTTP upstream gets and the response head the client gets."""

from __future__ import annotations

from proxyfleet.gateway import wire
from proxyfleet.gateway.tunnels import Hold
from proxyfleet.gateway.upstream import credentials

LEASE_HEADER, PROXY_HEADER = "X-Proxyfleet-Lease-Id", "X-Proxyfleet-Proxy-Id"
EPOCH_HEADER = "X-Proxyfleet-Lease-Epoch"
"""With the lease id, what renew, report and release through the API take."""


def ids(hold: Hold) -> list[tuple[str, str]]:
    """The headers that tell a client its lease and proxy."""
    return [
        (LEASE_HEADER, hold.lease_id),
        (EPOCH_HEADER, str(hold.epoch)),
        (PROXY_HEADER, hold.proxy.id),
    ]


def upstream_head(req: wire.RequestHead, hold: Hold) -> bytes:
    """The request as the upstream gets it: absolute URL, the client's hop-by-hop headers
    (its credentials among them) dropped, the upstream's own credentials added."""
    lines = [f"{req.method} http://{req.authority}{req.target} HTTP/1.1\r\n".encode()]
    for name, value in req.headers:
        if name.lower() not in wire.HOP_BY_HOP:
            lines.append(name + b": " + value + b"\r\n")
    lines.append(credentials(hold.proxy))
    lines.append(b"Connection: close\r\n\r\n")
    return b"".join(lines)


def _replaced(name: bytes) -> bool:
    """Response headers the gateway sets itself (a target cannot forge the ids)."""
    return name in (b"connection", b"keep-alive") or name.startswith(b"x-proxyfleet-")


def with_ids(head: bytes, hold: Hold) -> bytes:
    """The upstream's response head with the lease and proxy ids, and `Connection: close`
    (the gateway relays one request per connection)."""
    status_line, _, rest = head.partition(b"\r\n")
    kept = [
        line
        for line in rest.split(b"\r\n")
        if line and not _replaced(line.split(b":", 1)[0].strip().lower())
    ]
    extra = [f"{k}: {v}".encode() for k, v in ids(hold)] + [b"Connection: close"]
    return b"\r\n".join([status_line, *kept, *extra]) + b"\r\n\r\n"
