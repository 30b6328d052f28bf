"""Opening the tunnel to the target through a proxy, in the protocol the proxy speaks:
HTTP CONNECT (in the clear, or inside TLS to an https proxy) or SOCKS5 with username and
password (the target's name resolved here for socks5, by the proxy for socks5h).

Each step's bytes and checks are pure (probe.py, proxyfleet.common.domain.socks5); this is
the I/O that runs them on the probe's connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from proxyfleet.common.domain import socks5
from proxyfleet.common.wire.models import Proxy
from proxyfleet.health import probe
from proxyfleet.health.conn import ProbeConnection, os_error
from proxyfleet.health.probe import FailureKind, ProbeFailure, Target


async def http_connect(conn: ProbeConnection, target: Target, proxy: Proxy) -> None:
    """CONNECT with the proxy's credentials; raises unless it answers 2xx."""
    conn.stage = "waiting for the proxy's CONNECT reply"
    conn.write(probe.connect_request(target, proxy.username, proxy.password))
    probe.check_connect(probe.parse_response_head(await conn.read_head("proxy"), "proxy"))


async def socks5_connect(conn: ProbeConnection, target: Target, host: str, proxy: Proxy) -> None:
    """Greeting, RFC 1929 auth when the proxy has credentials, CONNECT to `host` (an
    address, or the target's name for the proxy to resolve) and the target's port.
    One step at a time: a server may drop bytes sent before it answered the last step."""
    with_auth = bool(proxy.username or proxy.password)
    try:
        conn.stage = "waiting for the proxy's SOCKS5 method choice"
        conn.write(socks5.greeting(with_auth))
        method = socks5.check_method_choice(
            await conn.read_exactly(socks5.METHOD_CHOICE_LEN), with_auth
        )
        if method == socks5.USER_PASS:
            conn.stage = "waiting for the proxy's SOCKS5 auth status"
            conn.write(_auth_request(proxy))
            socks5.check_auth_status(await conn.read_exactly(socks5.AUTH_STATUS_LEN))
        conn.stage = "waiting for the proxy's SOCKS5 CONNECT reply"
        conn.write(_connect_request(host, target.port))
        prefix = await conn.read_exactly(socks5.REPLY_PREFIX_LEN)
        rest = await conn.read_exactly(socks5.reply_length(prefix) - socks5.REPLY_PREFIX_LEN)
        socks5.check_reply(prefix + rest)
    except socks5.Socks5Error as exc:
        raise probe.socks5_failure(exc) from None


def _auth_request(proxy: Proxy) -> bytes:
    try:
        return socks5.auth_request(proxy.username, proxy.password)
    except ValueError:  # the message would say nothing more; the values are secrets
        message = "credentials unusable with SOCKS5 (each must be 1 to 255 bytes)"
        raise ProbeFailure(FailureKind.AUTH, message) from None


def _connect_request(host: str, port: int) -> bytes:
    try:
        return socks5.connect_request(host, port)
    except ValueError as exc:
        raise ProbeFailure(FailureKind.TARGET, str(exc)) from None


def literal_address(host: str) -> str:
    """`host` when it is an IP address already (nothing to resolve), else ""."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return ""


async def resolve(conn: ProbeConnection, host: str, port: int) -> str:
    """The target's first address, resolved here (socks5: the proxy is given an address)."""
    conn.stage = "resolving the target's name"
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        message = f"cannot resolve the target {host}: {os_error(exc)}"
        raise ProbeFailure(FailureKind.TARGET, message) from None
    if not infos:
        raise ProbeFailure(FailureKind.TARGET, f"cannot resolve the target {host}: no address")
    return str(infos[0][4][0])
