"""The gateway's connections follow their leases: a release through the API cuts the
tunnel, a banned target is never served by that proxy, a failing upstream is reported and
the connection retried on another proxy, a plain 403 reports `blocked`."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from tests.api.helpers import CLIENT, Recorder, api_settings, providers_config
from tests.api.serving import serve
from tests.conftest import TargetServer
from tests.gateway.conftest import (
    StartGateway,
    connect_head,
    curl,
    eventually,
    raw_request,
    ready_proxy,
)
from tests.health.conftest import ProxyProcess

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.devstack.servers import free_port


@pytest.fixture
async def api(
    redis_url: str, nats_url: str, redis_client: object
) -> AsyncIterator[httpx.AsyncClient]:
    """The real API on the same Redis and NATS, as a client token sees it."""
    settings = api_settings(redis_url, nats_url, cooldown=0.0)
    app = create_app(settings, AppDeps(providers=providers_config(), clock=SystemClock()))
    url, stop = await serve(app)
    headers = {"Authorization": f"Bearer {CLIENT}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as client:
        yield client
    await stop()


async def _closed(reader: asyncio.StreamReader, within: float) -> float:
    """Seconds until the connection ends (AssertionError after `within`)."""
    started = time.monotonic()
    async with asyncio.timeout(within):
        try:
            while await reader.read(65536):
                pass
        except ConnectionResetError:
            pass
    return time.monotonic() - started


async def test_a_release_through_the_api_cuts_the_tunnel(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    api: httpx.AsyncClient,
) -> None:
    gw = await start_gateway()
    tunnel = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
    assert tunnel.status == 200
    lease_id, epoch = (
        tunnel.header("X-Proxyfleet-Lease-Id"),
        tunnel.header("X-Proxyfleet-Lease-Epoch"),
    )
    answer = await api.post(f"/v1/leases/{lease_id}/release", json={"epoch": int(epoch or 0)})
    assert answer.status_code == 200, answer.text
    assert await _closed(tunnel.reader, within=1.0) < 1.0
    await eventually(lambda: len(gw.tunnels) == 0, within=2)


async def test_a_banned_target_is_never_served_by_that_proxy(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    api: httpx.AsyncClient,
) -> None:
    gw = await start_gateway(cooldown=0.0)
    banned = sorted(fleet)[0]
    # a client that saw that proxy blocked on the target reports it through the API
    grant = await api.post("/v1/leases", json={"proxy_id": banned, "target": "127.0.0.1"})
    assert grant.status_code == 201, grant.text
    lease = grant.json()
    report = await api.post(
        f"/v1/leases/{lease['lease_id']}/report",
        json={"epoch": lease["epoch"], "outcome": "blocked"},
    )
    assert report.status_code == 200, report.text
    await api.post(f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]})
    served = set()
    for _ in range(3 * len(fleet)):
        got = await curl(gw.url(), target.url, ca_file=target.ca_file)
        served.update(got.header("X-Proxyfleet-Proxy-Id"))
    assert banned not in served
    assert served == set(fleet) - {banned}


async def test_a_failing_upstream_is_reported_and_the_connection_retried(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    gw_squids: list[ProxyProcess],
    target: TargetServer,
    events: Recorder,
) -> None:
    dead = await ready_proxy(registry, free_port(), zone="z2")  # nothing listens there
    live = await ready_proxy(registry, gw_squids[0].port, zone="z2")
    gw = await start_gateway(cooldown=0.0)
    served = []
    for _ in range(3):
        got = await curl(gw.url("c-zone-z2"), target.url, ca_file=target.ca_file)
        assert got.code == 0, got.stderr
        served += got.header("X-Proxyfleet-Proxy-Id")
    assert served == [live] * 3
    failed = await events.event("lease.reported", proxy_id=dead)
    assert failed.data.outcome == "failed"


async def test_two_failing_upstreams_are_a_502(
    start_gateway: StartGateway, registry: ProxyRegistry, target: TargetServer
) -> None:
    for _ in range(2):
        await ready_proxy(registry, free_port())
    gw = await start_gateway(cooldown=0.0)
    reply = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
    assert reply.status == 502
    assert "destination_unavailable" in (reply.header("Proxy-Status") or "")
    reply.close()


async def _plain_server(status: int, *, keep: bool = False) -> tuple[asyncio.Server, int]:
    """An origin answering `status` to each request (`keep`: on one connection)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            body = b"no robots"
            head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
            if not keep:
                break
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _get(port: int) -> bytes:
    creds = base64.b64encode(f"crawler:{CLIENT}".encode()).decode()
    return (
        f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Proxy-Authorization: Basic {creds}\r\n\r\n"
    ).encode()


async def test_a_plain_403_reports_blocked_and_bans_the_proxy_for_that_target(
    start_gateway: StartGateway, fleet: dict[str, int], events: Recorder
) -> None:
    server, port = await _plain_server(403)
    gw = await start_gateway(cooldown=0.0)
    try:
        got = await curl(gw.url(), f"http://127.0.0.1:{port}/page")
        assert "403" in got.head
        assert got.body == b"no robots"
        [proxy_id] = got.header("X-Proxyfleet-Proxy-Id")
        blocked = await events.event("lease.reported", proxy_id=proxy_id)
        assert blocked.data.outcome == "blocked"
        assert blocked.data.target == "127.0.0.1"
        later = set()
        for _ in range(2 * len(fleet)):
            again = await curl(gw.url(), f"http://127.0.0.1:{port}/page")
            later.update(again.header("X-Proxyfleet-Proxy-Id"))
        assert proxy_id not in later
    finally:
        server.close()


async def test_a_target_cannot_forge_the_ids(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    server, port = await _plain_server(200)
    gw = await start_gateway(cooldown=0.0)
    try:
        got = await curl(gw.url(), f"http://127.0.0.1:{port}/")
        assert got.body == b"no robots"
        [proxy_id] = got.header("X-Proxyfleet-Proxy-Id")
        assert proxy_id in fleet
    finally:
        server.close()


async def test_an_upstream_refusing_its_credentials_is_a_502_that_shows_none(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    gw_squids: list[ProxyProcess],
    target: TargetServer,
    events: Recorder,
) -> None:
    wrong = "wrong-password-of-the-proxy"
    proxy_id = await ready_proxy(registry, gw_squids[0].port, password=wrong)
    server, port = await _plain_server(200)
    gw = await start_gateway(cooldown=0.0)
    try:
        tunnel = await curl(gw.url(), target.url, ca_file=target.ca_file)
        plain = await curl(gw.url(), f"http://127.0.0.1:{port}/")
    finally:
        server.close()
    for got in (tunnel, plain):
        assert "HTTP/1.1 502" in got.head
        assert wrong.encode() not in got.head.encode() + got.body
    failed = await events.event("lease.reported", proxy_id=proxy_id)
    assert failed.data.outcome == "failed"


async def test_a_lease_ended_while_its_connection_reaches_the_upstream_is_cut_at_once(
    start_gateway: StartGateway, registry: ProxyRegistry, api: httpx.AsyncClient
) -> None:
    """The release event comes before the relay starts (the upstream answers late): the
    tunnel is closed as soon as it would open, not at the next renewal."""
    got_connect, answer_now = asyncio.Event(), asyncio.Event()

    async def slow_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        got_connect.set()
        await answer_now.wait()
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await reader.read()  # until the gateway closes its side
        writer.close()

    server = await asyncio.start_server(slow_proxy, "127.0.0.1", 0)
    try:
        await ready_proxy(registry, server.sockets[0].getsockname()[1])
        gw = await start_gateway()
        reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
        writer.write(connect_head("example.test:443"))
        await asyncio.wait_for(got_connect.wait(), 5)
        [lease] = (await api.get("/v1/leases")).json()["items"]  # another worker of ours
        answer = await api.post(
            f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
        )
        assert answer.status_code == 200, answer.text
        await eventually(lambda: gw.tunnels.ended(lease["lease_id"]) != "", within=2)
        answer_now.set()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 200")
        assert await _closed(reader, within=1.0) < 1.0
        writer.close()
    finally:
        server.close()


async def test_a_release_through_the_api_closes_an_idle_keepalive_connection(
    start_gateway: StartGateway, fleet: dict[str, int], api: httpx.AsyncClient
) -> None:
    server, port = await _plain_server(200, keep=True)
    gw = await start_gateway()
    try:
        reply = await raw_request(gw.port, _get(port))
        assert reply.status == 200
        assert reply.header("Connection") is None  # kept, waiting for a next request
        lease_id = reply.header("X-Proxyfleet-Lease-Id")
        epoch = reply.header("X-Proxyfleet-Lease-Epoch")
        answer = await api.post(f"/v1/leases/{lease_id}/release", json={"epoch": int(epoch or 0)})
        assert answer.status_code == 200, answer.text
        await reply.reader.readexactly(len(b"no robots"))
        assert await _closed(reply.reader, within=1.0) < 1.0
        await eventually(lambda: len(gw.tunnels) == 0, within=2)
    finally:
        server.close()
