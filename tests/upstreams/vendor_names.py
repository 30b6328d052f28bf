"""What a residential vendor's gateway reads from a request: the username's session and
country, the credentials and where a request goes. Pure: no I/O.

Usernames as vendors spell them: `customer-<name>` (a new exit for every connection),
`customer-<name>-session-<id>` (one exit per session id), either followed by
`-country-<xx>`.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from dataclasses import dataclass

_USERNAME = re.compile(
    r"customer-(?P<customer>[a-z0-9]+)"
    r"(?:-session-(?P<session>[A-Za-z0-9]+))?"
    r"(?:-country-(?P<country>[a-z]{2}))?"
)


@dataclass(frozen=True, slots=True)
class VendorUsername:
    customer: str
    session: str
    """"": no session, so every connection leaves from a new address."""
    country: str
    """"": any country."""


def parse_username(username: str) -> VendorUsername | None:
    """The username's parts; None when it is not one a vendor accepts."""
    m = _USERNAME.fullmatch(username)
    if m is None:
        return None
    return VendorUsername(m["customer"], m["session"] or "", m["country"] or "")


def vendor_username(customer: str, session: str = "", country: str = "") -> str:
    """The username that asks for `session` (and `country`); the inverse of parse_username."""
    name = f"customer-{customer}"
    if session:
        name += f"-session-{session}"
    if country:
        name += f"-country-{country}"
    return name


def basic_credentials(value: str) -> tuple[str, str] | None:
    """(username, password) from a `Basic ...` Proxy-Authorization value; None if not one."""
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, colon, password = decoded.partition(":")
    return (username, password) if colon else None


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: str
    target: str
    """CONNECT: `host:port`; otherwise the absolute URL."""
    headers: list[tuple[str, str]]

    def header(self, name: str) -> str:
        return next((v for k, v in self.headers if k.lower() == name.lower()), "")


class BadHead(ValueError):
    """Not an HTTP/1.x request head."""


def parse_head(head: bytes) -> RequestHead:
    """The request line and headers of `head` (up to and with its blank line)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadHead(f"bad request line {lines[0]!r}")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise BadHead(f"bad header line {line!r}")
        headers.append((name.strip(), value.strip()))
    return RequestHead(parts[0], parts[1], headers)


def split_authority(authority: str) -> tuple[str, int]:
    """(host, port) of `host:port` or `[v6]:port`; BadHead when there is no port."""
    host, colon, port = authority.rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise BadHead(f"bad authority {authority!r}")
    return host.strip("[]"), int(port)


def absolute_form(url: str) -> tuple[str, int, str]:
    """(host, port, path) of an absolute `http://host[:port]/path` URL."""
    if not url.startswith("http://"):
        raise BadHead(f"not an absolute http:// URL: {url!r}")
    authority, slash, rest = url[len("http://") :].partition("/")
    if ":" not in authority.rsplit("]", 1)[-1]:
        authority += ":80"
    host, port = split_authority(authority)
    return host, port, slash + rest or "/"


def origin_request(head: RequestHead, path: str) -> bytes:
    """`head` as the origin should see it: origin-form, no proxy headers, one request."""
    hop = {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}
    lines = [f"{head.method} {path} HTTP/1.1"]
    lines += [f"{k}: {v}" for k, v in head.headers if k.lower() not in hop]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def loopback_destination(host: str) -> bool:
    """Tests never reach past loopback: `localhost` or a 127/8 (or ::1) literal."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exit_address(base: str, index: int) -> str:
    """The `index`-th exit address (from 0) counting up from `base` (a 127/8 address)."""
    address = ipaddress.IPv4Address(base) + index
    if not address.is_loopback:
        raise ValueError(f"exit address {index} past the end of 127.0.0.0/8")
    return str(address)
