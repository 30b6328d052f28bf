"""HTTP/1.1 as the gateway speaks it to clients: the request head, the Basic credentials
and the answers it writes itself (where a body ends is `framing`). Pure: bytes in, values
out, no I/O.

Only what a forward proxy needs is parsed; anything else is a `BadRequest` with the
status to answer (400 or 431), never an exception that escapes."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

MAX_HEADERS = 100

TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253}):([0-9]{1,5})")
_ABSOLUTE = re.compile(r"http://([^/?#@\s]+)([^\s#]*)")
_REASONS = {
    200: "Connection established",
    400: "Bad Request",
    403: "Forbidden",
    405: "Method Not Allowed",
    407: "Proxy Authentication Required",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
}
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"upgrade",
    }
)
"""Headers never forwarded upstream (transfer-encoding is kept: the body is relayed as is)."""


class BadRequest(ValueError):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: str
    target: str
    """CONNECT: host:port. Otherwise the absolute URL's path and query (`/x?y`)."""
    host: str
    port: int
    headers: list[tuple[bytes, bytes]]
    """In order, names as sent."""
    version: str = "HTTP/1.1"

    @property
    def is_connect(self) -> bool:
        return self.method == "CONNECT"

    def header(self, name: bytes) -> bytes | None:
        lower = name.lower()
        for key, value in self.headers:
            if key.lower() == lower:
                return value
        return None

    @property
    def keeps_alive(self) -> bool:
        """Whether the client may send another request on this connection: HTTP/1.1
        without `Connection: close`. HTTP/1.0 closes (its keep-alive extension is not
        taken)."""
        return self.version == "HTTP/1.1" and b"close" not in connection_tokens(self.headers)

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"


def parse_head(head: bytes) -> RequestHead:
    """A request head (request line and headers, ending with the blank line)."""
    lines = head.split(b"\r\n")
    if len(lines) < 2 or lines[-1] != b"" or lines[-2] != b"":
        raise BadRequest(400, "the request head must end with an empty line (CRLF)")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        raise BadRequest(400, "expected a request line: METHOD TARGET HTTP/1.1")
    raw_method, raw_target, version = parts
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise BadRequest(400, "only HTTP/1.1 and HTTP/1.0 are spoken here")
    if not TOKEN.fullmatch(raw_method):
        raise BadRequest(400, "the method is not a token")
    try:
        target = raw_target.decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest(400, "the request target is not ASCII") from None
    headers = _headers(lines[1:-2])
    method = raw_method.decode()
    if method == "CONNECT":
        host, port = _authority(target)
        return RequestHead(method, target, host, port, headers, version.decode())
    m = _ABSOLUTE.fullmatch(target)
    if m is None:
        raise BadRequest(400, "a forward proxy takes CONNECT host:port or an absolute http:// URL")
    authority, path = m.group(1), m.group(2) or "/"
    if ":" in authority.rsplit("]", 1)[-1]:
        host, port = _authority(authority)
    else:
        host, port = _authority(f"{authority}:80")
    if not path.startswith(("/", "?")):
        raise BadRequest(400, "the URL's path must start with '/'")
    return RequestHead(method, path, host, port, headers, version.decode())


def _authority(text: str) -> tuple[str, int]:
    m = _HOST_PORT.fullmatch(text)
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise BadRequest(400, "the target must be host:port with a port in 1-65535")
    return m.group(1), int(m.group(2))


def _headers(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    if len(lines) > MAX_HEADERS:
        raise BadRequest(431, f"more than {MAX_HEADERS} header fields")
    out: list[tuple[bytes, bytes]] = []
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not TOKEN.fullmatch(name):
            raise BadRequest(400, "a header line is not 'name: value'")
        value = value.strip(b" \t")
        if has_control(value):
            raise BadRequest(400, "a header value has a control character")
        out.append((name, value))
    return out


def has_control(value: bytes) -> bool:
    """A control character other than a tab (a header value may not carry one)."""
    return any(c < 0x20 and c != 0x09 for c in value) or b"\x7f" in value


def values_of(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    """Every value of the header `name` (lowercase), in order."""
    return [value for key, value in headers if key.lower() == name]


def list_items(values: list[bytes]) -> list[bytes]:
    """The elements of a comma-separated list header, lowercased."""
    return [item.strip().lower() for value in values for item in value.split(b",") if item.strip()]


def connection_tokens(headers: list[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """The options of the Connection header fields (`close`, `keep-alive`, header names
    that are hop-by-hop for this message), lowercased."""
    return frozenset(list_items(values_of(headers, b"connection")))


_FRAMING = frozenset({b"content-length", b"transfer-encoding"})


def nominated(headers: list[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """The header names Connection makes hop-by-hop for this message (not forwarded),
    except the framing headers: the gateway delimits the body by them, so the next hop
    must see them too (or the rest of a body would read as another message)."""
    return connection_tokens(headers) - _FRAMING


def basic_credentials(value: bytes | None) -> tuple[str, str] | None:
    """(username, password) of a `Basic` Proxy-Authorization value; None when absent or
    not Basic credentials (the gateway answers 407 for both)."""
    if value is None:
        return None
    scheme, _, encoded = value.strip().partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, sep, password = decoded.partition(":")
    return (username, password) if sep else None


def basic_value(username: str, password: str) -> bytes:
    """The Proxy-Authorization value for these credentials."""
    return b"Basic " + base64.b64encode(f"{username}:{password}".encode())


def response(status: int, headers: list[tuple[str, str]] | None = None, body: str = "") -> bytes:
    """An answer of the gateway's own (the connection closes after an error)."""
    payload = body.encode()
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}"]
    for name, value in headers or []:
        lines.append(f"{name}: {_clean(value)}")
    if status != 200:
        lines += [
            "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(payload)}",
            "Connection: close",
        ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def _clean(value: str) -> str:
    """A header value without CR/LF (a value may quote what a client sent)."""
    return "".join(c if c.isprintable() else "?" for c in value)


def proxy_status(error: str, details: str = "") -> tuple[str, str]:
    """An RFC 9209 Proxy-Status header naming this gateway and the error type."""
    value = f"proxyfleet-gateway; error={error}"
    if details:
        escaped = details.replace("\\", "\\\\").replace('"', '\\"')
        value += f'; details="{escaped}"'
    return ("Proxy-Status", value)
