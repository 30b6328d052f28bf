"""A stopping gateway (SIGTERM, a rollout) takes no new connections, lets the open ones
finish within --drain-seconds while their leases are still followed, then closes the rest."""

from __future__ import annotations

import asyncio
import ssl

import pytest
from tests.conftest import TargetServer
from tests.gateway.conftest import RunningGateway, StartGateway, connect_head, raw_request

from proxyfleet.common.store import LeaseStore


async def _refuses_connections(port: int, within: float = 5.0) -> None:
    for _ in range(int(within / 0.05)):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except (ConnectionRefusedError, ConnectionResetError):
            return  # refused, or reset while queued for an accept that will not come
        writer.close()
        await asyncio.sleep(0.05)
    pytest.fail(f"port {port} still accepts connections after {within} s")


async def _stopped(gw: RunningGateway, within: float) -> None:
    async with asyncio.timeout(within):
        await asyncio.gather(*gw.components)


async def test_open_tunnels_finish_while_no_new_connection_is_taken(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    lease_store: LeaseStore,
) -> None:
    gw = await start_gateway(drain_seconds=30.0)
    tunnel = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
    assert tunnel.status == 200
    lease_id = tunnel.header("X-Proxyfleet-Lease-Id")
    assert lease_id
    gw.stop.set()
    await _refuses_connections(gw.port)
    # The open tunnel still carries a whole HTTPS request meanwhile.
    await tunnel.writer.start_tls(ssl.create_default_context(cafile=target.ca_file))
    tunnel.writer.write(b"GET /probe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    answer = await asyncio.wait_for(tunnel.reader.read(), 10)
    assert answer.startswith(b"HTTP/1.1 200")
    assert not any(task.done() for task in gw.components)  # still draining
    tunnel.close()
    await _stopped(gw, within=10)  # the last connection ended: no wait for the deadline
    found = await lease_store.get(lease_id)
    assert found is not None
    assert found[1] == "released"  # and its release was written before the end


async def test_what_is_still_open_at_the_deadline_is_closed(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(drain_seconds=0.5)
    tunnel = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
    assert tunnel.status == 200
    gw.stop.set()
    async with asyncio.timeout(10):
        assert await tunnel.reader.read() == b""  # the gateway closed it
    await _stopped(gw, within=10)
