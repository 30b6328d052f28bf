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
import time
from collections.abc import Callable

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


RESOLVE_FOR = 30.0
"""Seconds the target's resolved address is used by socks5 probes before it is looked up
again (getaddrinfo has no TTL to give; the system resolver may not cache)."""


class TargetResolver:
    """The target's address for socks5 probes (the proxy is given an address): looked up
    here at most once per RESOLVE_FOR seconds, one lookup shared by the probes waiting for
    it, a failed lookup never kept."""

    def __init__(self, host: str, port: int, *, now: Callable[[], float] = time.monotonic) -> None:
        self._host, self._port, self._now = host, port, now
        self._address = literal_address(host)
        self._literal = bool(self._address)
        self._until = 0.0
        self._lookup: asyncio.Future[str] | None = None

    async def address(self, conn: ProbeConnection) -> str:
        if self._literal or (self._address and self._now() < self._until):
            return self._address
        conn.stage = "resolving the target's name"
        lookup = self._lookup
        if lookup is None or lookup.done():  # done: failed, or its address has expired
            lookup = self._lookup = asyncio.ensure_future(self._resolve())
        # shielded: a probe that times out must not cancel the lookup the others wait for
        return await asyncio.shield(lookup)

    async def _resolve(self) -> str:
        loop = asyncio.get_running_loop()
        host = self._host
        try:
            infos = await loop.getaddrinfo(host, self._port, type=socket.SOCK_STREAM)
        except OSError as exc:
            message = f"cannot resolve the target {host}: {os_error(exc)}"
            raise ProbeFailure(FailureKind.TARGET, message) from None
        if not infos:
            raise ProbeFailure(FailureKind.TARGET, f"cannot resolve the target {host}: no address")
        self._address, self._until = str(infos[0][4][0]), self._now() + RESOLVE_FOR
        return self._address
