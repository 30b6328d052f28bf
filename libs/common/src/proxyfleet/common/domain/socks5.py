"""SOCKS5 (RFC 1928, username/password auth per RFC 1929), both sides: the bytes a client
sends and what the answers mean; what a server reads and the answers it sends
(`socks5_server`). Pure: the health prober and the gateway do the I/O.

The exchange: greeting -> method choice; auth request -> auth status (when the server chose
username/password); CONNECT request -> reply (its length known from its first 5 bytes).
"""

from __future__ import annotations

import enum
import ipaddress
import re
import struct
from dataclasses import dataclass

VERSION = 5
AUTH_VERSION = 1
NO_AUTH, USER_PASS, NO_ACCEPTABLE = 0x00, 0x02, 0xFF
CMD_CONNECT, CMD_BIND, CMD_UDP_ASSOCIATE = 0x01, 0x02, 0x03
ATYP_IPV4, ATYP_DOMAIN, ATYP_IPV6 = 0x01, 0x03, 0x04

METHOD_CHOICE_LEN = 2
AUTH_STATUS_LEN = 2
REPLY_PREFIX_LEN = 5
"""VER REP RSV ATYP and the first address byte: enough to know the reply's length."""


class Reply(enum.IntEnum):
    """The REP field of a server's reply (RFC 1928 section 6)."""

    SUCCEEDED = 0x00
    GENERAL_FAILURE = 0x01
    NOT_ALLOWED = 0x02
    NETWORK_UNREACHABLE = 0x03
    HOST_UNREACHABLE = 0x04
    CONNECTION_REFUSED = 0x05
    TTL_EXPIRED = 0x06
    COMMAND_NOT_SUPPORTED = 0x07
    ADDRESS_TYPE_NOT_SUPPORTED = 0x08


class Socks5Error(Exception):
    """The server broke the protocol or refused; `reply` is its REP code when it sent one."""

    def __init__(self, message: str, reply: Reply | None = None, *, auth: bool = False) -> None:
        super().__init__(message)
        self.reply = reply
        self.auth = auth
        """The server refused the credentials (or offered no method we have)."""


def greeting(with_auth: bool) -> bytes:
    """The methods offered: username/password when there are credentials, else none."""
    return bytes([VERSION, 1, USER_PASS if with_auth else NO_AUTH])


def check_method_choice(data: bytes, with_auth: bool) -> int:
    """The method the server chose (2 bytes); an error when it chose none we offered."""
    if len(data) != METHOD_CHOICE_LEN or data[0] != VERSION:
        raise Socks5Error("not a SOCKS5 server (bad answer to the greeting)")
    method = data[1]
    if method == NO_ACCEPTABLE or method not in ((USER_PASS, NO_AUTH) if with_auth else (NO_AUTH,)):
        raise Socks5Error(f"the server accepts none of our auth methods ({method:#04x})", auth=True)
    return method


def auth_request(username: str, password: str) -> bytes:
    """RFC 1929: each of username and password 1 to 255 bytes."""
    user, secret = username.encode(), password.encode()
    if not 0 < len(user) < 256 or not 0 < len(secret) < 256:
        raise ValueError("SOCKS5 username and password must each be 1 to 255 bytes")
    return bytes([AUTH_VERSION, len(user)]) + user + bytes([len(secret)]) + secret


def check_auth_status(data: bytes) -> None:
    if len(data) != AUTH_STATUS_LEN or data[0] != AUTH_VERSION:
        raise Socks5Error("bad answer to the username/password request")
    if data[1] != 0:
        raise Socks5Error("the server refused the username/password", auth=True)


def connect_request(host: str, port: int) -> bytes:
    """CONNECT to host:port; an IP literal goes as an address, any other name as a domain
    for the server to resolve (socks5h; plain socks5 callers resolve it first)."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        name = host.encode("idna")
        if not 0 < len(name) < 256:
            raise ValueError(f"host name too long for SOCKS5: {host!r}") from None
        address = bytes([ATYP_DOMAIN, len(name)]) + name
    else:
        atyp = ATYP_IPV4 if ip.version == 4 else ATYP_IPV6
        address = bytes([atyp]) + ip.packed
    return bytes([VERSION, CMD_CONNECT, 0]) + address + struct.pack("!H", port)


def reply_length(prefix: bytes) -> int:
    """The whole reply's length from its first REPLY_PREFIX_LEN bytes."""
    if len(prefix) < REPLY_PREFIX_LEN or prefix[0] != VERSION:
        raise Socks5Error("bad reply to CONNECT")
    length = _addressed_length(prefix)
    if length is None:
        raise Socks5Error(f"bad address type in the reply to CONNECT: {prefix[3]}")
    return length


def _addressed_length(prefix: bytes) -> int | None:
    """The length of a request or reply (VER, CMD or REP, RSV, ATYP, address, port) from
    its first 5 bytes; None for an address type RFC 1928 does not define."""
    atyp = prefix[3]
    if atyp == ATYP_IPV4:
        return 4 + 4 + 2
    if atyp == ATYP_IPV6:
        return 4 + 16 + 2
    if atyp == ATYP_DOMAIN:
        return 4 + 1 + prefix[4] + 2
    return None


def check_reply(data: bytes) -> None:
    """Raise unless the reply (whole, reply_length bytes) says the tunnel is open."""
    code = data[1]
    if code == Reply.SUCCEEDED:
        return
    try:
        reply = Reply(code)
    except ValueError:
        raise Socks5Error(f"CONNECT refused with unknown code {code}") from None
    raise Socks5Error(f"CONNECT refused: {reply.name.lower().replace('_', ' ')}", reply)


# ---- the server side ------------------------------------------------------------------------
# The server reads each message in steps whose lengths the bytes before tell: the greeting's
# first GREETING_PREFIX_LEN bytes, then its methods; the auth request's first
# AUTH_PREFIX_LEN, then the username and the password's length byte, then the password;
# the request's first REQUEST_PREFIX_LEN, then the rest. Every refusal is a Socks5Error:
# `auth` (answer auth_status(False), close), `reply` (answer reply(it), close) or neither
# (not SOCKS5: close without an answer).

GREETING_PREFIX_LEN = 2
"""VER NMETHODS."""
AUTH_PREFIX_LEN = 2
"""VER ULEN."""
REQUEST_PREFIX_LEN = REPLY_PREFIX_LEN
"""VER CMD RSV ATYP and the first address byte: enough to know the request's length."""

HOST_NAME = re.compile(r"[A-Za-z0-9_.-]{1,253}")
"""A name the server passes on (to an HTTP CONNECT line, or a SOCKS5 upstream): what DNS
and the HTTP side's CONNECT authority take; IDN names come as their ASCII form (IDNA)."""


@dataclass(frozen=True, slots=True)
class Request:
    """A client's CONNECT: a name as sent (never resolved here), an IPv4 address, or an
    IPv6 address in brackets (as in an authority), and the port."""

    host: str
    port: int
    is_name: bool


def methods_count(prefix: bytes) -> int:
    """How many method bytes follow the greeting's first GREETING_PREFIX_LEN bytes."""
    if len(prefix) != GREETING_PREFIX_LEN or prefix[0] != VERSION:
        raise Socks5Error("not a SOCKS5 greeting")
    if prefix[1] == 0:
        raise Socks5Error("a greeting that offers no method")
    return prefix[1]


def choose_method(methods: bytes) -> int:
    """Username/password (the only method taken: the password is a client token) when
    offered, else NO_ACCEPTABLE."""
    return USER_PASS if USER_PASS in methods else NO_ACCEPTABLE


def method_choice(method: int) -> bytes:
    return bytes([VERSION, method])


def username_length(prefix: bytes) -> int:
    """The username's length from the auth request's first AUTH_PREFIX_LEN bytes; the
    password's length byte follows the username."""
    if len(prefix) != AUTH_PREFIX_LEN or prefix[0] != AUTH_VERSION:
        raise Socks5Error("not a username/password request (RFC 1929)", auth=True)
    if prefix[1] == 0:
        raise Socks5Error("an empty username", auth=True)
    return prefix[1]


def password_length(username_and_length: bytes) -> int:
    """The password's length: the last byte of the username read with the byte after it."""
    if username_and_length[-1] == 0:
        raise Socks5Error("an empty password", auth=True)
    return username_and_length[-1]


def credentials(username: bytes, password: bytes) -> tuple[str, str]:
    """Username and password as text (UTF-8; anything else is refused credentials)."""
    try:
        return username.decode("utf-8"), password.decode("utf-8")
    except UnicodeDecodeError:
        raise Socks5Error("a username or password that is not UTF-8", auth=True) from None


def auth_status(ok: bool) -> bytes:
    """RFC 1929's answer: 0 success; any other status and the server closes."""
    return bytes([AUTH_VERSION, 0 if ok else 1])


def request_length(prefix: bytes) -> int:
    """The whole request's length from its first REQUEST_PREFIX_LEN bytes."""
    if len(prefix) != REQUEST_PREFIX_LEN or prefix[0] != VERSION:
        raise Socks5Error("not a SOCKS5 request")
    length = _addressed_length(prefix)
    if length is None:
        raise Socks5Error(
            f"address type {prefix[3]:#04x} is not one of RFC 1928's",
            Reply.ADDRESS_TYPE_NOT_SUPPORTED,
        )
    return length


def parse_request(data: bytes) -> Request:
    """A whole request (request_length bytes): a CONNECT, or a refusal with its reply."""
    if data[1] != CMD_CONNECT:  # BIND and UDP ASSOCIATE included: docs/gateway.md says why
        raise Socks5Error(f"command {data[1]:#04x}: only CONNECT", Reply.COMMAND_NOT_SUPPORTED)
    atyp, (port,) = data[3], struct.unpack("!H", data[-2:])
    if atyp == ATYP_DOMAIN:
        name = data[5:-2].decode("ascii", errors="replace")
        if not HOST_NAME.fullmatch(name):
            raise Socks5Error("the name is not a host name", Reply.HOST_UNREACHABLE)
        host, is_name = name, True
    elif atyp == ATYP_IPV4:
        host, is_name = str(ipaddress.IPv4Address(data[4:-2])), False
    else:
        host, is_name = f"[{ipaddress.IPv6Address(data[4:-2])}]", False
    if port == 0:
        raise Socks5Error("port 0", Reply.HOST_UNREACHABLE)
    return Request(host, port, is_name)


def reply(code: Reply) -> bytes:
    """The answer to a request. The bound address is 0.0.0.0:0: the tunnel leaves from the
    leased proxy, whose address a client is never told."""
    return bytes([VERSION, code, 0, ATYP_IPV4]) + bytes(6)
