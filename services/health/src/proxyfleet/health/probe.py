"""The probe's wire protocol as pure functions: no sockets, no clock, tested directly.

A probe opens a tunnel to the target through the proxy with the proxy's credentials (`CONNECT
host:port`, or SOCKS5: proxyfleet.common.domain.socks5), then sends one `GET` to the target
inside it (over TLS for an https target). The target may answer with a JSON body
`{"ip": "..."}`, which gives the proxy's egress IP.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass
from urllib.parse import urlsplit

import msgspec

from proxyfleet.common.domain import socks5

MAX_HEAD_BYTES = 16 * 1024
"""Longest response head (status line and headers) a probe accepts."""
MAX_BODY_BYTES = 64 * 1024
"""Longest target body a probe reads (the egress IP is in the first bytes)."""
USER_AGENT = "proxyfleet-health/1"


class FailureKind(enum.StrEnum):
    """Why a probe failed; the `result` label of the probe metrics."""

    UNREACHABLE = "unreachable"
    """The proxy did not accept a TCP connection."""
    AUTH = "auth"
    """The proxy rejected the credentials (HTTP 407, or SOCKS5's username/password)."""
    PROXY = "proxy"
    """The proxy refused the tunnel otherwise, spoke no HTTP (or no SOCKS5), or an https
    proxy failed its TLS handshake (its certificate rejected)."""
    TLS = "tls"
    """The TLS handshake with the target through the tunnel failed."""
    TARGET = "target"
    """The target answered with a non-2xx status, or the tunnel closed early."""
    TIMEOUT = "timeout"
    """The probe did not finish within its timeout."""


class ProbeFailure(Exception):
    """A probe failed for a known reason; the message is safe to store and log."""

    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Target:
    """Where a probe goes once the tunnel is up."""

    host: str
    port: int
    path: str
    tls: bool

    @property
    def authority(self) -> str:
        """`host:port` as CONNECT wants it (IPv6 literals in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_target(url: str) -> Target:
    """`https://host[:port]/path` (or http) -> Target; ValueError naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise ValueError(f"target {url!r}: expected an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError(f"target {url!r}: no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"target {url!r}: bad port") from None
    tls = parts.scheme == "https"
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(host=parts.hostname, port=port or (443 if tls else 80), path=path, tls=tls)


def basic_credentials(username: str, password: str) -> str:
    """The value of a Basic authorization header."""
    token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
    return f"Basic {token}"


def connect_request(target: Target, username: str, password: str) -> bytes:
    """The CONNECT request that opens a tunnel to the target, with the proxy's credentials."""
    return (
        f"CONNECT {target.authority} HTTP/1.1\r\n"
        f"Host: {target.authority}\r\n"
        f"Proxy-Authorization: {basic_credentials(username, password)}\r\n"
        f"User-Agent: {USER_AGENT}\r\n"
        "\r\n"
    ).encode("latin-1")


def get_request(target: Target) -> bytes:
    """The GET sent to the target through the tunnel (one request, then close)."""
    host = target.authority if target.port != (443 if target.tls else 80) else target.host
    return (
        f"GET {target.path} HTTP/1.1\r\n"
        f"Host: {host}\r\n"
        f"User-Agent: {USER_AGENT}\r\n"
        "Accept: application/json, */*;q=0.1\r\n"
        "Connection: close\r\n"
        "\r\n"
    ).encode("latin-1")


@dataclass(frozen=True, slots=True)
class ResponseHead:
    """Status line and headers of an HTTP/1.x response (header names lowercased)."""

    status: int
    reason: str
    headers: dict[str, str]

    @property
    def content_length(self) -> int | None:
        raw = self.headers.get("content-length")
        if raw is None:
            return None
        try:
            value = int(raw)
        except ValueError:
            return None
        return value if value >= 0 else None


def parse_response_head(data: bytes, who: str = "proxy") -> ResponseHead:
    """Parse `HTTP/1.x NNN reason` and its headers, up to and including the blank line.

    Raises ProbeFailure(PROXY or TARGET) when `who` did not speak HTTP/1.x.
    """
    kind = FailureKind.PROXY if who == "proxy" else FailureKind.TARGET
    text = data.decode("latin-1")
    lines = text.split("\r\n")
    status_line = lines[0]
    version, _, rest = status_line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise ProbeFailure(kind, f"{who} sent no HTTP status line: {status_line[:60]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            break
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return ResponseHead(status=int(code), reason=reason.strip(), headers=headers)


def check_connect(head: ResponseHead) -> None:
    """A tunnel is open only on 2xx; 407 means the credentials were rejected."""
    if head.status == 407:
        raise ProbeFailure(FailureKind.AUTH, "proxy rejected credentials (407)")
    if not 200 <= head.status < 300:
        raise ProbeFailure(
            FailureKind.PROXY, f"proxy refused CONNECT: {head.status} {head.reason}".rstrip()
        )


def check_target(head: ResponseHead) -> None:
    if not 200 <= head.status < 300:
        raise ProbeFailure(
            FailureKind.TARGET, f"target answered {head.status} {head.reason}".rstrip()
        )


class _IpBody(msgspec.Struct):
    ip: str = ""


_ip_decoder = msgspec.json.Decoder(_IpBody)


def wants_body(head: ResponseHead) -> bool:
    """Only a JSON body can carry the egress IP; any other body is not read."""
    return "json" in head.headers.get("content-type", "")


def is_chunked(head: ResponseHead) -> bool:
    return "chunked" in head.headers.get("transfer-encoding", "").lower()


def dechunk(data: bytes) -> bytes:
    """The payload of a (possibly truncated) chunked body; stops at the last full chunk."""
    out = bytearray()
    pos = 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            break
        size_text = data[pos:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            break
        if size == 0 or end + 2 + size > len(data):
            break
        out += data[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2
    return bytes(out)


def egress_ip(body: bytes) -> str:
    """The `ip` of a JSON body `{"ip": "..."}`, or "" when the target does not report one."""
    try:
        return _ip_decoder.decode(body).ip
    except msgspec.DecodeError:
        return ""


def socks5_failure(exc: socks5.Socks5Error) -> ProbeFailure:
    """What a SOCKS5 proxy's refusal or protocol error means for the probe: credentials
    refused are the proxy's AUTH failure, like a 407."""
    if exc.auth:
        return ProbeFailure(FailureKind.AUTH, f"proxy rejected credentials (SOCKS5: {exc})")
    if exc.reply is not None:
        name = exc.reply.name.lower().replace("_", " ")
        message = f"proxy refused CONNECT: {name} (SOCKS5 reply {int(exc.reply)})"
        return ProbeFailure(FailureKind.PROXY, message)
    return ProbeFailure(FailureKind.PROXY, f"SOCKS5 proxy: {exc}")
