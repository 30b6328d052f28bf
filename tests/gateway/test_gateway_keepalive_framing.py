"""Keep-alive against a scripted upstream in place of Squid (exact bytes): the upstream
connection is kept while the upstream allows it and replaced when it does not (or closed
it meanwhile); a response whose body cannot be delimited is a 502 while nothing of it
went out, and cuts the connection after; a request body that cannot be is a 400."""

from __future__ import annotations

import asyncio
import base64

import pytest
from tests.api.helpers import CLIENT, Recorder
from tests.gateway.conftest import StartGateway, eventually, raw_request, ready_proxy
from tests.gateway.http_peers import THEN_CLOSE, WAIT, Client, scripted

from proxyfleet.common.store import ProxyRegistry
from proxyfleet.gateway.framing import MAX_CHUNK_LINE

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
URL = "http://origin.test/page"


def _plain(extra: bytes = b"", body: bytes = b"") -> bytes:
    creds = base64.b64encode(f"crawler:{CLIENT}".encode())
    return (
        b"POST " + URL.encode() + b" HTTP/1.1\r\nHost: origin.test\r\n"
        b"Proxy-Authorization: Basic " + creds + b"\r\n" + extra + b"\r\n" + body
    )


@pytest.mark.parametrize(
    ("answers", "connections"),
    [
        ([OK, OK, OK], 1),  # the upstream keeps its connection: so does the gateway
        ([OK.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"), OK, OK], 2),
        ([OK, b"", OK], 2),  # it closed the kept one as the request came: sent again
    ],
)
async def test_the_upstream_connection_is_kept_while_the_upstream_allows(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    answers: list[bytes],
    connections: int,
) -> None:
    async with scripted(*answers) as upstream:
        await ready_proxy(registry, upstream.port)
        gw = await start_gateway()
        client = await Client.open(gw.port)
        replies = [await client.request("GET", URL) for _ in range(2)]
        client.close()
    assert [(r.status, r.body, r.keeps) for r in replies] == [(200, b"ok", True)] * 2
    assert upstream.connections == connections
    assert b"Connection: close" not in b"".join(upstream.heads)  # keep-alive was asked


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + b"e" * MAX_CHUNK_LINE,
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok",
    ],
)
async def test_a_response_that_cannot_be_delimited_is_a_502(
    start_gateway: StartGateway, registry: ProxyRegistry, events: Recorder, answer: bytes
) -> None:
    async with scripted(answer) as upstream:
        proxy_id = await ready_proxy(registry, upstream.port)
        gw = await start_gateway()
        client = await Client.open(gw.port)
        reply = await client.request("GET", URL)
        assert reply.status == 502
        assert "error=http_protocol_error" in reply.headers["proxy-status"]
        assert b"hello" not in reply.body
        assert await client.closed()
    failed = await events.event("lease.reported", proxy_id=proxy_id)
    assert failed.data.outcome == "failed"


async def test_a_body_that_breaks_after_its_head_went_out_cuts_the_connection(
    start_gateway: StartGateway, registry: ProxyRegistry
) -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
    go_on = asyncio.Event()
    async with scripted(head + b"|zz\r\n", hold=go_on) as upstream:
        await ready_proxy(registry, upstream.port)
        gw = await start_gateway()
        reply = await raw_request(gw.port, _plain().replace(b"POST", b"GET", 1))
        assert reply.status == 200  # the head went out before the break
        assert await asyncio.wait_for(reply.reader.readexactly(10), 5) == b"5\r\nhello\r\n"
        go_on.set()
        async with asyncio.timeout(5):  # cut, never the end of the body
            assert await reply.reader.read() == b""
        reply.close()


@pytest.mark.parametrize(
    ("request_", "split"),
    [
        (_plain(b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", b"ok"), False),
        (_plain(b"Transfer-Encoding: chunked\r\n", b"zz\r\nok\r\n0\r\n\r\n"), False),
        (_plain(b"Transfer-Encoding: chunked\r\n", b"2\r\nok\r\nzz\r\n"), True),
    ],
)
async def test_a_request_body_that_cannot_be_delimited_is_a_400(
    start_gateway: StartGateway, registry: ProxyRegistry, request_: bytes, split: bool
) -> None:
    """Refused whether the break comes with the head or after (the upstream waits)."""
    async with scripted(WAIT) as upstream:
        await ready_proxy(registry, upstream.port)
        gw = await start_gateway()
        head, _, body = request_.partition(b"\r\n\r\n")
        reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
        if split:
            writer.write(head + b"\r\n\r\n" + body[:9])
            await eventually(lambda: bool(upstream.heads))
            writer.write(body[9:])
        else:
            writer.write(request_)
        answer = await asyncio.wait_for(reader.read(), 5)  # then closed
        writer.close()
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"error=http_request_error" in answer
    assert b"zz" not in b"".join(upstream.heads)


async def test_an_interim_answer_is_passed_and_the_final_one_follows(
    start_gateway: StartGateway, registry: ProxyRegistry
) -> None:
    async with scripted(b"HTTP/1.1 100 Continue\r\n\r\n" + OK, OK) as upstream:
        await ready_proxy(registry, upstream.port)
        gw = await start_gateway()
        client = await Client.open(gw.port)
        sent = client.send("POST", URL, body=b"data", headers=(("Expect", "100-continue"),))
        reply = await client.receive(sent)
        assert (reply.status, reply.body, reply.keeps) == (200, b"ok", True)
        assert (await client.request("GET", URL)).body == b"ok"  # and the connection goes on
        client.close()
    assert b"Expect: 100-continue" in upstream.heads[0]


async def test_a_body_that_ends_with_the_upstream_connection_ends_the_client_one(
    start_gateway: StartGateway, registry: ProxyRegistry
) -> None:
    answer = b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\nuntil the end" + THEN_CLOSE
    async with scripted(answer) as up:
        await ready_proxy(registry, up.port)
        gw = await start_gateway()
        client = await Client.open(gw.port)
        reply = await client.request("GET", URL)
        assert (reply.status, reply.body) == (200, b"until the end")
        assert reply.headers["connection"] == "close"  # not the upstream's keep-alive
        assert await client.closed()
