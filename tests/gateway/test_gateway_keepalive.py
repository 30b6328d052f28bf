"""Plain HTTP with keep-alive, through real Squids to a local origin: one client
connection carries request after request (every way a body ends), on one lease while the
host stays the same and a new one for another host; `Connection: close`, HTTP/1.0, the
idle timeout, pipelining and a stopping gateway are honoured."""

from __future__ import annotations

import asyncio
import ssl

from tests.api.helpers import Recorder
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, eventually
from tests.gateway.http_peers import CHUNKS, Client, origin

from proxyfleet.common.store import LeaseStore


async def _lease(lease_store: LeaseStore, lease_id: str) -> tuple[str, str]:
    """The lease's target and state."""
    found = await lease_store.get(lease_id)
    assert found is not None
    return found[0].target, found[1]


async def test_one_connection_carries_every_kind_of_body_on_one_lease(
    start_gateway: StartGateway, fleet: dict[str, int], lease_store: LeaseStore
) -> None:
    gw = await start_gateway()
    async with origin() as site:
        client = await Client.open(gw.port)
        replies = [
            await client.request("GET", site.url("/len/5")),
            await client.request("GET", site.url("/chunked")),
            await client.request("HEAD", site.url("/len/7")),
            await client.request("GET", site.url("/nocontent")),
            await client.request("POST", site.url("/echo"), body=b"x" * 70_000),
            await client.request("POST", site.url("/echo"), body=b"abcdef" * 50, chunked=True),
            # the origin ends this body by closing; Squid sends it on chunked
            await client.request("GET", site.url("/close/9")),
        ]
        [relay] = list(gw.tunnels)
        upstream = relay.upstream
        last = await client.request("GET", site.url("/len/3"))
        assert relay.upstream is upstream  # the connection to the Squid was kept too
        lease_id = last.lease_id
        assert await _lease(lease_store, lease_id) == ("127.0.0.1", "active")
        client.close()
        await eventually(lambda: len(gw.tunnels) == 0)
    assert [r.status for r in replies] == [200, 200, 200, 204, 200, 200, 200]
    assert [r.body for r in replies] == [
        b"LLLLL", b"".join(CHUNKS), b"", b"", b"x" * 70_000, b"abcdef" * 50, b"C" * 9,
    ]  # fmt: skip
    assert replies[1].headers["transfer-encoding"] == "chunked"
    assert replies[2].headers["content-length"] == "7"  # HEAD: the length, no body
    assert all(r.keeps and "connection" not in r.headers for r in [*replies, last])
    assert site.requests[5] == ("POST", "/echo", b"abcdef" * 50)
    assert {r.lease_id for r in replies} == {lease_id}
    assert (await _lease(lease_store, lease_id))[1] == "released"  # with the connection


async def test_another_host_ends_the_lease_and_takes_a_new_one(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    lease_store: LeaseStore,
    events: Recorder,
) -> None:
    gw = await start_gateway()
    async with origin("127.0.0.1") as one, origin("127.0.0.2") as two:
        client = await Client.open(gw.port)
        first = await client.request("GET", one.url("/len/1"))
        again = await client.request("GET", one.url("/status/403"))  # same host, same lease
        assert first.lease_id == again.lease_id
        blocked = await events.event("lease.reported", lease_id=first.lease_id)
        assert (blocked.data.outcome, blocked.data.target) == ("blocked", "127.0.0.1")
        other = await client.request("GET", two.url("/len/2"))
        assert other.lease_id not in ("", first.lease_id)
        # the first lease ended as a closed connection's would; the new one is for its host
        assert await _lease(lease_store, first.lease_id) == ("127.0.0.1", "released")
        assert await _lease(lease_store, other.lease_id) == ("127.0.0.2", "active")
        await events.event("lease.released", lease_id=first.lease_id)  # it closes nothing
        back = await client.request("GET", one.url("/len/3"))
        assert back.lease_id not in (first.lease_id, other.lease_id)
        assert back.headers["x-proxyfleet-proxy-id"] != first.headers["x-proxyfleet-proxy-id"]
        assert [r.status for r in (first, again, other, back)] == [200, 403, 200, 200]
        assert (await _lease(lease_store, other.lease_id))[1] == "released"
        client.close()
        await eventually(lambda: len(gw.tunnels) == 0)
    assert await _lease(lease_store, back.lease_id) == ("127.0.0.1", "released")


async def test_a_session_keeps_its_lease_for_every_host(
    start_gateway: StartGateway, fleet: dict[str, int], lease_store: LeaseStore
) -> None:
    gw = await start_gateway()
    async with origin("127.0.0.1") as one, origin("127.0.0.2") as two:
        client = await Client.open(gw.port)
        replies = [
            await client.request("GET", site.url("/len/1"), username="c-session-ka1")
            for site in (one, two, one)
        ]
        client.close()
        await eventually(lambda: len(gw.tunnels) == 0)
    assert len({r.lease_id for r in replies}) == 1
    assert (await _lease(lease_store, replies[0].lease_id))[1] == "active"  # a session's


async def test_connection_close_from_the_client_is_honoured(
    start_gateway: StartGateway, fleet: dict[str, int], lease_store: LeaseStore
) -> None:
    gw = await start_gateway()
    async with origin() as site:
        client = await Client.open(gw.port)
        kept = await client.request("GET", site.url("/len/1"))
        assert kept.keeps
        last = await client.request("GET", site.url("/len/2"), headers=(("Connection", "close"),))
        assert (last.status, last.body, last.headers["connection"]) == (200, b"LL", "close")
        assert not last.keeps
        assert await client.closed()
        await eventually(lambda: len(gw.tunnels) == 0)
        assert site.requests[-1] == ("GET", "/len/2", b"")
    assert (await _lease(lease_store, kept.lease_id))[1] == "released"


async def test_http_1_0_is_one_request_and_a_close_delimited_body_passes(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    """An HTTP/1.0 request goes up as HTTP/1.0, so Squid ends the body by closing (no
    chunks a 1.0 client could not read); the client connection closes after it."""
    gw = await start_gateway()
    async with origin() as site:
        client = await Client.open(gw.port)
        reply = await client.request("GET", site.url("/close/70000"), version=b"1.0")
        assert (reply.status, reply.body) == (200, b"C" * 70_000)
        assert "content-length" not in reply.headers
        assert "transfer-encoding" not in reply.headers
        assert reply.headers["connection"] == "close"
        assert await client.closed()


async def test_an_idle_keepalive_connection_is_closed(
    start_gateway: StartGateway, fleet: dict[str, int], lease_store: LeaseStore
) -> None:
    gw = await start_gateway(keepalive_idle=0.5)
    async with origin() as site:
        client = await Client.open(gw.port)
        first = await client.request("GET", site.url("/len/1"))
        second = await client.request("GET", site.url("/len/1"))  # within the idle time
        assert first.lease_id == second.lease_id
        assert await client.closed(within=5.0)
        await eventually(lambda: len(gw.tunnels) == 0)
    assert (await _lease(lease_store, first.lease_id))[1] == "released"


async def test_pipelined_requests_are_answered_in_order(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    gw = await start_gateway()
    async with origin() as site:
        client = await Client.open(gw.port)
        paths = ["/len/3", "/chunked", "/echo", "/len/5"]
        sent = [
            client.send("POST" if path == "/echo" else "GET", site.url(path), body=b"e" * 10)
            if path == "/echo"
            else client.send("GET", site.url(path))
            for path in paths
        ]  # all written before any answer is read
        replies = [await client.receive(conn) for conn in sent]
        client.close()
    assert [r.body for r in replies] == [b"LLL", b"".join(CHUNKS), b"e" * 10, b"LLLLL"]
    assert [path for _, path, _ in site.requests] == paths
    assert len({r.lease_id for r in replies}) == 1


async def test_a_stopping_gateway_closes_idle_keepalive_connections_at_once(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    gw = await start_gateway(drain_seconds=30.0)
    async with origin() as site:
        client = await Client.open(gw.port)
        assert (await client.request("GET", site.url("/len/1"))).keeps
        gw.stop.set()
        assert await client.closed(within=5.0)
        async with asyncio.timeout(10):  # not the 30 s of the drain
            await asyncio.gather(*gw.components)


async def test_a_connect_after_plain_requests_turns_the_connection_into_a_tunnel(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway()
    async with origin() as site:
        client = await Client.open(gw.port)
        plain = await client.request("GET", site.url("/len/1"))
        client.writer.write(connect_head(f"127.0.0.1:{target.port}"))
        head = await asyncio.wait_for(client.reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 200 Connection established")
        assert plain.lease_id.encode() not in head  # the tunnel's lease is its own
        await client.writer.start_tls(ssl.create_default_context(cafile=target.ca_file))
        client.writer.write(b"GET /probe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(client.reader.read(), 10)
        assert answer.startswith(b"HTTP/1.1 200")
        client.close()
