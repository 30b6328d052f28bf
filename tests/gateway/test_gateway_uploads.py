"""A plain-HTTP request body that takes its time: the wait for the upstream's answer
starts when the body stops coming, so an upload longer than that wait is answered, and an
upload that stalls for longer than it is a 502 (the wait still bounds a silent upstream)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator

import pytest
from tests.api.helpers import CLIENT
from tests.gateway.conftest import StartGateway, ready_proxy

from proxyfleet.common.store import ProxyRegistry

WAIT = {"connect_timeout": 0.3, "header_timeout": 0.3}
"""The answer's wait: 0.6 s after the request went up."""
PIECES = 6
PAUSE = 0.25
"""An upload of 1.5 s, each pause well inside the wait."""


@contextlib.asynccontextmanager
async def reading_upstream() -> AsyncIterator[int]:
    """A stand-in for Squid that reads a whole Content-Length body, then answers 200 with
    the length it read."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
            body = await reader.readexactly(length)
            size = str(len(body)).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(size), size))
            await writer.drain()
            await reader.read()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def _upload(port: int, pauses: list[float]) -> bytes:
    """A POST whose body goes in len(pauses) pieces, each after its pause; the status
    line of the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    piece = b"x" * 1000
    creds = base64.b64encode(f"crawler:{CLIENT}".encode())
    writer.write(
        b"POST http://origin.test/upload HTTP/1.1\r\nHost: origin.test\r\n"
        b"Proxy-Authorization: Basic " + creds + b"\r\n"
        b"Content-Length: %d\r\n\r\n" % (len(piece) * len(pauses))
    )

    async def answer() -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"HTTP/1.1 200"):
            head += await reader.readexactly(4)  # the length the upstream read
        return head

    answered = asyncio.create_task(answer())
    try:
        for pause in pauses:
            await asyncio.wait([answered], timeout=pause)
            if answered.done():
                break  # answered before the body was complete: the rest is not wanted
            writer.write(piece)
        async with asyncio.timeout(10):
            return await answered
    finally:
        writer.close()


async def test_an_upload_longer_than_the_answer_wait_is_answered(
    start_gateway: StartGateway, registry: ProxyRegistry
) -> None:
    async with reading_upstream() as port:
        await ready_proxy(registry, port)
        gw = await start_gateway(**WAIT)
        head = await _upload(gw.port, [PAUSE] * PIECES)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
    assert head.endswith(b"\r\n\r\n6000")


@pytest.mark.parametrize("stall_at", [0, 3])
async def test_an_upload_that_stalls_past_the_wait_is_a_502(
    start_gateway: StartGateway, registry: ProxyRegistry, stall_at: int
) -> None:
    pauses = [0.05] * PIECES
    pauses[stall_at] = 1.5  # no byte for longer than the wait: the upstream is not answering
    async with reading_upstream() as port:
        await ready_proxy(registry, port)
        gw = await start_gateway(**WAIT)
        head = await _upload(gw.port, pauses)
    assert head.startswith(b"HTTP/1.1 502 "), head
