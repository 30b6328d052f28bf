"""Reaching the leased upstream proxy with its own credentials (clients never see them)."""

from __future__ import annotations

import asyncio
import time

from proxyfleet.common.store.leases import GrantedProxy
from proxyfleet.gateway.metrics import BYTES_DOWN, UPSTREAM_CONNECT_SECONDS
from proxyfleet.gateway.splice import HeadTooLarge, Side
from proxyfleet.gateway.wire import basic_value


class UpstreamFailed(Exception):
    """The upstream proxy could not be reached, or refused the request."""


async def open_upstream(proxy: GrantedProxy, within: float, limit: int) -> Side:
    """A connection to the proxy; what it sends is kept until piped (a response head is
    read from it first)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(within):
            _, side = await loop.create_connection(
                lambda: Side(BYTES_DOWN, limit=limit), proxy.host, proxy.port
            )
    except TimeoutError:
        raise UpstreamFailed(f"no connection within {within:g} s") from None
    except OSError as exc:
        raise UpstreamFailed(f"connect failed: {exc.strerror or exc}") from None
    return side


def credentials(proxy: GrantedProxy) -> bytes:
    """The Proxy-Authorization header line for the upstream."""
    return b"Proxy-Authorization: " + basic_value(proxy.username, proxy.password) + b"\r\n"


async def open_tunnel(proxy: GrantedProxy, authority: str, within: float, limit: int) -> Side:
    """A CONNECT tunnel to `authority` through the proxy, its 200 answer read."""
    started = time.perf_counter()
    result = "failed"
    try:
        side = await open_upstream(proxy, within, limit)
        try:
            side.write(
                f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n".encode()
                + credentials(proxy)
                + b"\r\n"
            )
            async with asyncio.timeout(within):
                head = await side.read_head()
        except TimeoutError:
            side.abort()
            raise UpstreamFailed(f"no answer to CONNECT within {within:g} s") from None
        except (OSError, asyncio.IncompleteReadError, HeadTooLarge) as exc:
            side.abort()
            raise UpstreamFailed(f"CONNECT failed: {type(exc).__name__}") from None
        status = status_of(head)
        if status != 200:
            side.abort()
            raise UpstreamFailed(f"the upstream answered CONNECT with {status}")
        result = "ok"
        return side
    finally:
        UPSTREAM_CONNECT_SECONDS.labels(result).observe(time.perf_counter() - started)


def status_of(head: bytes) -> int:
    """The status of a response head; 0 when it is not one."""
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        return 0
    return int(parts[1])
