"""Reaching the leased upstream proxy in its own protocol, with its own credentials
(clients never see them): `http` in the clear, `https` the same inside TLS (its
certificate verified), `socks5`/`socks5h` by the SOCKS dialogue (`socks`)."""

from __future__ import annotations

import asyncio
import ssl
import time

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain.socks5 import Reply, Socks5Error
from proxyfleet.common.store.lease_terms import GrantedProxy
from proxyfleet.common.wire.models import Scheme
from proxyfleet.gateway.metrics import BYTES_DOWN, CONNECTS_BY_RESULT
from proxyfleet.gateway.socks import resolve, socks_connect
from proxyfleet.gateway.splice import HeadTooLarge, Side
from proxyfleet.gateway.wire import basic_value

SOCKS = frozenset({Scheme.SOCKS5, Scheme.SOCKS5H})
"""The schemes whose proxies are reached by SOCKS5: a plain-HTTP request goes through a
tunnel to its host, in origin form and without Proxy-Authorization."""


class UpstreamFailed(Exception):
    """The upstream proxy could not be reached, or refused the request; `reply` is the
    SOCKS5 reply code that says so to a SOCKS5 client."""

    def __init__(self, message: str, reply: Reply = Reply.NETWORK_UNREACHABLE) -> None:
        super().__init__(message)
        self.reply = reply


class Unresolved(UpstreamFailed):
    """The target's name did not resolve here (a `socks5` proxy gets an address): no
    fault of the proxy's, and no other proxy would fare better."""

    def __init__(self, message: str) -> None:
        super().__init__(message, Reply.HOST_UNREACHABLE)


CONNECT_STATUS_REPLIES = {
    403: Reply.NOT_ALLOWED,
    500: Reply.HOST_UNREACHABLE,
    502: Reply.HOST_UNREACHABLE,
    503: Reply.CONNECTION_REFUSED,
    504: Reply.TTL_EXPIRED,
}
"""What an HTTP upstream's answer to CONNECT says of the target, as a SOCKS5 reply (Squid
answers 403 for a port its rules forbid, 503 when the target refuses the connection, 500
for a name it cannot resolve; 502 and 504 are what other proxies answer for an
unreachable target and a time-out); any other status is the proxy's own failure."""


TLS_CLOSE_WITHIN = 10.0
"""Seconds a TLS upstream connection has to flush and close once its client finished."""


class _TlsSide(Side):
    """The connection to an `https` upstream: TLS cannot be half-closed."""

    def eof_received(self) -> bool:
        super().eof_received()
        return False  # asyncio would warn that a TLS connection cannot stay half-open

    def write_eof(self) -> None:
        # The client finished sending: what it sent goes out, then the connection closes
        # (Squid ends a tunnel on its client's EOF too), so the relay ends with it.
        self.close_after_write(within=TLS_CLOSE_WITHIN)


def tls_context(ca_bundle: str) -> ssl.SSLContext:
    """The context that verifies `https` upstreams (chain and host name) against
    `ca_bundle`, or the system's store when empty; ConfigError when it cannot load."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        if ca_bundle:
            ctx.load_verify_locations(cafile=ca_bundle)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"--upstream-ca-bundle {ca_bundle}: cannot load it: {exc}") from None
    return ctx


class Dialer:
    """Opens connections to leased proxies, each within `within` seconds (connection,
    TLS handshake and the proxy's answer), heads read up to `limit` bytes."""

    def __init__(self, within: float, limit: int, tls: ssl.SSLContext) -> None:
        self._within = within
        self._limit = limit
        self._tls = tls

    async def tunnel(
        self, proxy: GrantedProxy, host: str, port: int, *, resolve_here: bool = True
    ) -> Side:
        """A tunnel to host:port through the proxy, open (its answer read). `resolve_here`
        False: a name goes to a `socks5` proxy as a name too (never resolved here)."""
        started = time.perf_counter()
        result = "failed"
        try:
            if proxy.scheme in SOCKS:
                side = await self._socks(proxy, host, port, resolve_here)
            else:
                side = await self._connect(proxy, f"{host}:{port}")
            result = "ok"
            return side
        finally:
            CONNECTS_BY_RESULT[result].observe(time.perf_counter() - started)

    async def plain(self, proxy: GrantedProxy, host: str, port: int) -> Side:
        """A connection for plain-HTTP requests to host:port: to the proxy itself (the
        request goes in absolute form, with credentials), or for a SOCKS5 proxy a tunnel
        to host:port (it goes in origin form)."""
        if proxy.scheme in SOCKS:
            return await self.tunnel(proxy, host, port)
        return await self._open(proxy)

    async def _open(self, proxy: GrantedProxy) -> Side:
        """A connection to the proxy (TLS for `https`); what it sends is kept until piped
        (a response head is read from it first)."""
        loop = asyncio.get_running_loop()
        tls = self._tls if proxy.scheme == Scheme.HTTPS else None
        side_type, limit = (_TlsSide if tls else Side), self._limit
        try:
            async with asyncio.timeout(self._within):
                _, side = await loop.create_connection(
                    lambda: side_type(BYTES_DOWN, limit=limit), proxy.host, proxy.port, ssl=tls
                )
        except TimeoutError:
            message = f"no connection within {self._within:g} s"
            raise UpstreamFailed(message, Reply.TTL_EXPIRED) from None
        except ssl.SSLCertVerificationError as exc:
            raise UpstreamFailed(f"TLS: {exc.verify_message}") from None
        except ssl.SSLError as exc:
            raise UpstreamFailed(f"TLS: {exc.reason or exc}") from None
        except OSError as exc:
            raise UpstreamFailed(f"connect failed: {exc.strerror or exc}") from None
        return side

    async def _connect(self, proxy: GrantedProxy, authority: str) -> Side:
        """HTTP CONNECT (over TLS for `https`), its 200 answer read."""
        side = await self._open(proxy)
        try:
            side.write(
                f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n".encode()
                + credentials(proxy)
                + b"\r\n"
            )
            async with asyncio.timeout(self._within):
                head = await side.read_head()
        except TimeoutError:
            side.abort()
            message = f"no answer to CONNECT within {self._within:g} s"
            raise UpstreamFailed(message, Reply.TTL_EXPIRED) from None
        except (OSError, asyncio.IncompleteReadError, HeadTooLarge) as exc:
            side.abort()
            raise UpstreamFailed(f"CONNECT failed: {type(exc).__name__}") from None
        status = status_of(head)
        if status != 200:
            side.abort()
            reply = CONNECT_STATUS_REPLIES.get(status, Reply.NETWORK_UNREACHABLE)
            raise UpstreamFailed(f"the upstream answered CONNECT with {status}", reply)
        return side

    async def _socks(self, proxy: GrantedProxy, host: str, port: int, resolve_here: bool) -> Side:
        """The SOCKS5 dialogue up to an open tunnel (`socks5`: to the address this
        gateway resolves `host` to, unless not `resolve_here`; `socks5h`: to the name)."""
        if proxy.scheme == Scheme.SOCKS5 and resolve_here:
            try:
                async with asyncio.timeout(self._within):
                    host = await resolve(host, port)
            except (TimeoutError, OSError) as exc:
                raise Unresolved(f"cannot resolve {host}: {type(exc).__name__}") from None
        side = await self._open(proxy)
        try:
            async with asyncio.timeout(self._within):
                await socks_connect(side, proxy, host, port)
        except TimeoutError:
            side.abort()
            message = f"no SOCKS5 answer within {self._within:g} s"
            raise UpstreamFailed(message, Reply.TTL_EXPIRED) from None
        except Socks5Error as exc:
            side.abort()
            # Its own failure (general, or none given) is the proxy's; a target's, the target's.
            reply = exc.reply if exc.reply not in (None, Reply.GENERAL_FAILURE) else None
            raise UpstreamFailed(f"SOCKS5: {exc}", reply or Reply.NETWORK_UNREACHABLE) from None
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            side.abort()
            raise UpstreamFailed(f"SOCKS5 failed: {type(exc).__name__}") from None
        return side


def credentials(proxy: GrantedProxy) -> bytes:
    """The Proxy-Authorization header line for an HTTP(S) upstream (none without
    credentials: a listed proxy may take none)."""
    if not proxy.username and not proxy.password:
        return b""
    return b"Proxy-Authorization: " + basic_value(proxy.username, proxy.password) + b"\r\n"


def status_of(head: bytes) -> int:
    """The status of a response head; 0 when it is not one."""
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        return 0
    return int(parts[1])
