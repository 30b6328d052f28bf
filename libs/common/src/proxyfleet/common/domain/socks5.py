"""SOCKS5 as a client speaks it (RFC 1928, username/password auth per RFC 1929): the bytes
to send and what the answers mean. Pure: the health prober and the gateway do the I/O.

The exchange: greeting -> method choice; auth request -> auth status (when the server chose
username/password); CONNECT request -> reply (its length known from its first 5 bytes).
"""

from __future__ import annotations

import enum
import ipaddress
import struct

VERSION = 5
AUTH_VERSION = 1
NO_AUTH, USER_PASS, NO_ACCEPTABLE = 0x00, 0x02, 0xFF
CMD_CONNECT = 0x01
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
    atyp = prefix[3]
    if atyp == ATYP_IPV4:
        return 4 + 4 + 2
    if atyp == ATYP_IPV6:
        return 4 + 16 + 2
    if atyp == ATYP_DOMAIN:
        return 4 + 1 + prefix[4] + 2
    raise Socks5Error(f"bad address type in the reply to CONNECT: {atyp}")


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
