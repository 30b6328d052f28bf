"""The gateway's data path on its own: two loopback connections joined by `splice.Side`
(as the gateway joins a client and its upstream), on asyncio and on uvloop. Flow control
keeps what the gateway buffers bounded when a reader is slow, nothing is lost on the way,
and a half-close passes through."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from proxyfleet.gateway.framing import Length
from proxyfleet.gateway.relaying import relayed
from proxyfleet.gateway.splice import HeadTooLarge, Side

PAYLOAD = os.urandom(8 * 1024 * 1024)


@dataclass
class Joined:
    """A client connection to a listener whose Sides are piped to a connection to an
    upstream server, as the gateway does after its CONNECT answer."""

    port: int
    upstream_port: int
    relays: list[asyncio.Task[None]] = field(default_factory=list)
    sides: list[tuple[Side, Side]] = field(default_factory=list)
    most_buffered: int = 0


@contextlib.asynccontextmanager
async def joined(
    on_upstream: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]],
    *,
    until_upstream_eof: bool = False,
) -> AsyncIterator[Joined]:
    loop = asyncio.get_running_loop()

    async def upstream_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        on_upstream.set_result((r, w))

    upstream_server = await asyncio.start_server(upstream_conn, "127.0.0.1", 0)
    state = Joined(0, upstream_server.sockets[0].getsockname()[1])

    async def relay(client: Side) -> None:
        _, upstream = await loop.create_connection(Side, "127.0.0.1", state.upstream_port)
        state.sides.append((client, upstream))
        await relayed(client, upstream, until_upstream_eof=until_upstream_eof)
        client.close_after_write(within=10)
        upstream.close_after_write(within=10)

    def accepted(client: Side) -> None:
        state.relays.append(loop.create_task(relay(client)))

    server = await loop.create_server(lambda: Side(on_made=accepted), "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]

    async def watch_buffers() -> None:
        while True:
            for client, upstream in state.sides:
                for side in (client, upstream):
                    if side.transport is not None and not side.transport.is_closing():
                        size = side.transport.get_write_buffer_size()
                        state.most_buffered = max(state.most_buffered, size)
            await asyncio.sleep(0.001)

    watcher = asyncio.ensure_future(watch_buffers())
    try:
        yield state
    finally:
        watcher.cancel()
        for task in state.relays:
            task.cancel()
        server.close()
        upstream_server.close()


async def test_a_slow_reader_pauses_the_fast_writer_and_gets_every_byte() -> None:
    upstream: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
        asyncio.get_running_loop().create_future()
    )
    async with joined(upstream, until_upstream_eof=True) as j:
        reader, writer = await asyncio.open_connection("127.0.0.1", j.port)
        _, up_writer = await asyncio.wait_for(upstream, 5)
        up_writer.write(PAYLOAD)  # all at once: only flow control can hold it back
        up_writer.write_eof()
        got = bytearray()
        async with asyncio.timeout(60):
            while chunk := await reader.read(16_384):
                got += chunk
                await asyncio.sleep(0.0005)  # a slow client
        writer.close()
    assert hashlib.sha256(got).digest() == hashlib.sha256(PAYLOAD).digest()
    # The gateway held at most about a write buffer's high-water mark plus a read, not
    # the 8 MiB the upstream sent at once.
    assert j.most_buffered < 1024 * 1024


async def test_a_half_close_passes_through_and_the_other_way_still_flows() -> None:
    upstream: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
        asyncio.get_running_loop().create_future()
    )
    async with joined(upstream) as j:
        reader, writer = await asyncio.open_connection("127.0.0.1", j.port)
        writer.write(b"request")
        writer.write_eof()  # the client is done sending
        up_reader, up_writer = await asyncio.wait_for(upstream, 5)
        assert await asyncio.wait_for(up_reader.read(), 5) == b"request"  # then EOF
        assert not j.relays[0].done()  # the answer may still come
        up_writer.write(b"answer")
        up_writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 5) == b"answer"
        await asyncio.wait_for(j.relays[0], 5)  # both ends done: the relay is over
        writer.close()


async def test_a_lost_connection_ends_the_relay() -> None:
    upstream: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
        asyncio.get_running_loop().create_future()
    )
    async with joined(upstream) as j:
        _, writer = await asyncio.open_connection("127.0.0.1", j.port)
        up_reader, _ = await asyncio.wait_for(upstream, 5)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # a reset, not an end of sending (that is a half-close)
        await asyncio.wait_for(j.relays[0], 5)
        assert await asyncio.wait_for(up_reader.read(), 5) == b""  # closed upstream too


async def test_read_head_keeps_what_follows_and_bounds_the_head() -> None:
    loop = asyncio.get_running_loop()
    made: asyncio.Future[Side] = loop.create_future()
    server = await loop.create_server(
        lambda: Side(on_made=made.set_result, limit=64), "127.0.0.1", 0
    )
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(b"CONNECT a:1 HTTP/1.1\r\n\r\nearly bytes")
        side = await asyncio.wait_for(made, 5)
        assert await asyncio.wait_for(side.read_head(), 5) == b"CONNECT a:1 HTTP/1.1\r\n\r\n"
        writer.write(b"x" * 100)  # no head end within the 64-byte limit
        with pytest.raises(HeadTooLarge):
            await asyncio.wait_for(side.read_head(), 5)
        writer.close()
    finally:
        server.close()


async def test_read_head_drops_empty_lines_before_a_head() -> None:
    """RFC 9112 2.2: a CRLF some clients send after a body is not a (bad) request."""
    loop = asyncio.get_running_loop()
    made: asyncio.Future[Side] = loop.create_future()
    server = await loop.create_server(lambda: Side(on_made=made.set_result), "127.0.0.1", 0)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(b"\r\n\r\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n")
        side = await asyncio.wait_for(made, 5)
        head = await asyncio.wait_for(side.read_head(), 5)
        assert head == b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"
        writer.close()
    finally:
        server.close()


async def test_a_body_kept_whole_over_the_head_limit_leaves_the_close_seen() -> None:
    """Over the limit, `_keep` pauses reading; once a body took what was kept, reading
    resumes, so the client's close is seen while the next head is awaited."""
    loop = asyncio.get_running_loop()
    made: asyncio.Future[Side] = loop.create_future()
    server = await loop.create_server(
        lambda: Side(on_made=made.set_result, limit=64), "127.0.0.1", 0
    )
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(b"POST http://a/ HTTP/1.1\r\nContent-Length: 200\r\n\r\n" + b"b" * 200)
        side = await asyncio.wait_for(made, 5)
        await asyncio.wait_for(side.read_head(), 5)
        side.meter_to(Side(), Length(200))  # a sink not connected: what it gets is dropped
        assert not side.metering
        writer.close()
        await asyncio.wait_for(side.wait_data(), 5)
        assert side.eof
        assert not side.kept
    finally:
        server.close()
