"""The heads of a relayed connection as the gateway rewrites them: the ids a client is
told, the request a plain-HTTP upstream gets and the response head the client gets."""

from __future__ import annotations

from proxyfleet.gateway import wire
from proxyfleet.gateway.tunnels import Hold
from proxyfleet.gateway.upstream import SOCKS, credentials

LEASE_HEADER, PROXY_HEADER = "X-Proxyfleet-Lease-Id", "X-Proxyfleet-Proxy-Id"
EPOCH_HEADER = "X-Proxyfleet-Lease-Epoch"
"""With the lease id, what renew, report and release through the API take."""

_HOP_BY_HOP_RESPONSE = frozenset({b"connection", b"keep-alive", b"proxy-connection"})


def ids(hold: Hold) -> list[tuple[str, str]]:
    """The headers that tell a client its lease and proxy."""
    return [
        (LEASE_HEADER, hold.lease_id),
        (EPOCH_HEADER, str(hold.epoch)),
        (PROXY_HEADER, hold.proxy.id),
    ]


def upstream_head(req: wire.RequestHead, hold: Hold, *, keep_alive: bool) -> bytes:
    """The request as the upstream gets it: absolute URL, the client's HTTP version, the
    client's hop-by-hop headers (its credentials among them, and those its Connection
    names) dropped, the upstream's own credentials added; `Connection: close` unless the
    upstream connection is to carry another request. Through a SOCKS5 proxy's tunnel the
    origin gets it: origin form, with a Host header, no credentials."""
    to_origin = hold.proxy.scheme in SOCKS
    if to_origin:
        path = req.target if req.target.startswith("/") else "/" + req.target
        lines = [f"{req.method} {path} {req.version}\r\n".encode()]
        if req.header(b"host") is None:
            lines.append(f"Host: {req.authority}\r\n".encode())
    else:
        lines = [f"{req.method} http://{req.authority}{req.target} {req.version}\r\n".encode()]
    named = wire.nominated(req.headers)
    for name, value in req.headers:
        lower = name.lower()
        if lower not in wire.HOP_BY_HOP and lower not in named:
            lines.append(name + b": " + value + b"\r\n")
    if not to_origin:
        lines.append(credentials(hold.proxy))
    lines.append(b"\r\n" if keep_alive else b"Connection: close\r\n\r\n")
    return b"".join(lines)


def with_ids(
    head: bytes, hold: Hold, *, keep_alive: bool, named: frozenset[bytes] = frozenset()
) -> bytes:
    """The upstream's response head with the lease and proxy ids, its connection headers
    (and the `named` ones they make hop-by-hop) replaced: `Connection: close` when the
    client connection ends after this response, none when it stays open (HTTP/1.1's
    default). A target cannot forge the ids."""
    status_line, _, rest = head.partition(b"\r\n")
    kept = []
    for line in rest.split(b"\r\n"):
        name = line.split(b":", 1)[0].strip().lower()
        dropped = name in _HOP_BY_HOP_RESPONSE or name in named
        if line and not dropped and not name.startswith(b"x-proxyfleet-"):
            kept.append(line)
    extra = [f"{k}: {v}".encode() for k, v in ids(hold)]
    if not keep_alive:
        extra.append(b"Connection: close")
    return b"\r\n".join([status_line, *kept, *extra]) + b"\r\n\r\n"
