"""One proxy per line, in the formats people paste: a URL (http, https, socks5, socks5h),
`host:port`, `host:port:user:pass` or `user:pass@host:port`. Pure: no I/O.

A reason never holds the line's text nor its password: reasons go to events, metrics and
logs, and a line may carry credentials.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from proxyfleet.common.wire.models import Scheme

SCHEMES = tuple(s.value for s in Scheme)
FORMATS = "a URL, host:port, host:port:user:pass or user:pass@host:port"
_HOST_PORT = re.compile(r"[^:]+:[0-9]+")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
ID_DIGITS = 20
"""Hex digits of an entry's hash in its proxy id (80 bits: no collision in any fleet)."""


class LineError(ValueError):
    """A line that is no proxy; `kind` is the metric's label: malformed, scheme, port,
    duplicate."""

    def __init__(self, reason: str, kind: str = "malformed") -> None:
        super().__init__(reason)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class ProxyLine:
    """An upstream proxy as a line gives it."""

    scheme: Scheme
    host: str
    port: int
    username: str = ""
    password: str = ""

    @property
    def key(self) -> tuple[str, str, int, str]:
        """What identifies the upstream (a changed password is the same proxy)."""
        return (self.scheme.value, self.host, self.port, self.username)

    def masked(self) -> str:
        """Its URL with the password as ***: what listings show."""
        where = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        if not self.username and not self.password:
            return f"{self.scheme.value}://{where}"
        return f"{self.scheme.value}://{self.username}:***@{where}"


def entry_id(provider: str, line: ProxyLine) -> str:
    """The proxy id of an upstream: the same for the same (provider, scheme, host, port,
    user) whatever the source and reload; valid where proxy ids are (`[a-z0-9-]`)."""
    text = "\n".join((provider, *map(str, line.key)))
    return "s" + hashlib.sha256(text.encode()).hexdigest()[:ID_DIGITS]


def parse_line(text: str, default_scheme: Scheme = Scheme.HTTP) -> ProxyLine | None:
    """The proxy a line names; None for a blank line or a comment (`#`); LineError."""
    text = text.strip()
    if not text or text.startswith("#"):
        return None
    if "://" in text:
        return _url(text)
    credentials, at, where = text.rpartition("@")
    # host:port:user:pass with an @ in the password is not user:pass@host:port.
    if at and _HOST_PORT.fullmatch(where):
        user, sep, password = credentials.partition(":")
        if not sep or not user:
            raise LineError(f"malformed: expected user:pass before @ ({FORMATS})")
        host, port = _host_port(where.split(":"))
        return ProxyLine(default_scheme, host, port, user, password)
    parts = text.split(":", 3)
    if len(parts) == 2 and not at:
        host, port = _host_port(parts)
        return ProxyLine(default_scheme, host, port)
    if len(parts) == 4 and parts[2]:
        host, port = _host_port(parts[:2])
        return ProxyLine(default_scheme, host, port, parts[2], parts[3])
    raise LineError(f"malformed: expected {FORMATS}")


def _url(text: str) -> ProxyLine:
    scheme = text.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        shown = scheme if re.fullmatch(r"[a-z][a-z0-9+.-]{0,15}", scheme) else "?"
        raise LineError(
            f"unknown scheme {shown!r}: expected one of {', '.join(SCHEMES)}", kind="scheme"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        if "out of range" in str(exc):
            raise LineError("port out of range: expected 1-65535", kind="port") from None
        raise LineError("malformed URL: expected scheme://[user:pass@]host:port") from None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise LineError("malformed URL: a proxy URL has no path, query or fragment")
    host = (parts.hostname or "").lower()
    if port is None or not host:
        raise LineError("malformed URL: expected scheme://[user:pass@]host:port with a port")
    _check_host(host, bracketed=parts.netloc.rpartition("@")[2].startswith("["))
    _check_port(port)
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    return ProxyLine(Scheme(scheme), host, port, user, password)


def _host_port(parts: list[str]) -> tuple[str, int]:
    if len(parts) != 2:
        raise LineError(f"malformed: expected host:port ({FORMATS}; IPv6 only in a URL)")
    host, port = parts[0].lower(), parts[1]
    _check_host(host, bracketed=False)
    if not port.isdigit():
        raise LineError("malformed: the port is not a number", kind="port")
    _check_port(int(port))
    return host, int(port)


def _check_host(host: str, *, bracketed: bool) -> None:
    if bracketed:
        if not re.fullmatch(r"[0-9a-f:.]+", host):
            raise LineError("malformed: not an IPv6 address in the brackets")
    elif not _HOST.fullmatch(host):
        raise LineError("malformed: not a host name or IPv4 address")


def _check_port(port: int) -> None:
    if not 1 <= port <= 65535:
        raise LineError("port out of range: expected 1-65535", kind="port")


@dataclass(frozen=True, slots=True)
class Rejected:
    """A bad line of a source: its number (1-based) and why (never its text)."""

    line: int
    reason: str
    kind: str


@dataclass(frozen=True, slots=True)
class Parsed:
    entries: list[tuple[int, ProxyLine]]
    """The good lines with their numbers, first of each upstream only."""
    rejected: list[Rejected]


def parse_lines(lines: Iterable[str], default_scheme: Scheme = Scheme.HTTP) -> Parsed:
    """Every line of a source: the good ones kept whatever the bad ones."""
    entries: list[tuple[int, ProxyLine]] = []
    rejected: list[Rejected] = []
    first: dict[tuple[str, str, int, str], int] = {}
    for number, text in enumerate(lines, start=1):
        try:
            line = parse_line(text, default_scheme)
        except LineError as exc:
            rejected.append(Rejected(number, str(exc), exc.kind))
            continue
        if line is None:
            continue
        if line.key in first:
            rejected.append(Rejected(number, f"duplicate of line {first[line.key]}", "duplicate"))
            continue
        first[line.key] = number
        entries.append((number, line))
    return Parsed(entries, rejected)
