"""Connections beyond the gateway's limit get a 503 with Retry-After at once, and the
limit follows the open-file limit (the host raises it to the hard one) unless one is set."""

from __future__ import annotations

import asyncio

from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, raw_request

from proxyfleet.gateway.limits import RESERVED_FILES, connection_cap


async def test_a_connection_over_the_limit_is_a_503_and_the_next_one_after_is_served(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(max_connections=1, cooldown=0.0)
    authority = f"127.0.0.1:{target.port}"
    first = await raw_request(gw.port, connect_head(authority))
    assert first.status == 200
    over = await raw_request(gw.port, connect_head(authority))
    assert over.status == 503
    assert over.header("Retry-After") == "1"
    status = over.header("Proxy-Status") or ""
    assert "error=proxy_internal_response" in status
    assert "limit of 1 connections" in status
    over.close()
    first.close()
    for _ in range(100):  # bounded: the first connection's end is seen within moments
        again = await raw_request(gw.port, connect_head(authority))
        if again.status == 200:
            again.close()
            return
        again.close()
        await asyncio.sleep(0.02)
    raise AssertionError("no connection served after the first one closed")


def test_the_cap_is_two_files_a_connection_unless_one_is_set() -> None:
    assert connection_cap(0, 1024) == (1024 - RESERVED_FILES) // 2
    assert connection_cap(250, 1024) == 250
    assert connection_cap(0, 10) == 1  # never none
