"""A plain-HTTP upload larger than a request head may be (--max-header-bytes), all of it
received with its head: once the answer is relayed and curl exits, the gateway sees the
client close, ends the connection and releases its lease (not after --keepalive-idle)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from tests.api.helpers import Recorder
from tests.gateway.conftest import StartGateway, curl, eventually

UP, DOWN = 70_001, 250_003
"""Over the gateway's 16 KB head limit, under what one read takes in; an answer larger
than a socket's buffers."""
BOUND = 2.0
"""How long after curl exits the lease may still be held (keepalive_idle is far longer)."""


@contextlib.asynccontextmanager
async def reading_origin() -> AsyncIterator[int]:
    """A plain-HTTP origin: reads the whole Content-Length body, answers DOWN bytes and
    closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % DOWN)
            writer.write(b"d" * DOWN)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def test_after_a_large_upload_the_client_s_close_ends_the_connection_and_its_lease(
    start_gateway: StartGateway, fleet: dict[str, int], events: Recorder, tmp_path: Path
) -> None:
    gw = await start_gateway(cooldown=0.0, keepalive_idle=60.0)
    upload = tmp_path / "upload"
    upload.write_bytes(b"u" * UP)
    async with reading_origin() as port:
        got = await curl(
            gw.url(), f"http://127.0.0.1:{port}/", "--data-binary", f"@{upload}", "-H", "Expect:"
        )
    assert got.code == 0, got.stderr
    assert len(got.body) == DOWN
    lease_id = got.header("X-Proxyfleet-Lease-Id")[0]
    released = await events.event("lease.released", within=BOUND, lease_id=lease_id)
    assert (released.data.bytes_up, released.data.bytes_down) == (UP, DOWN)
    await eventually(lambda: len(gw.tunnels) == 0, within=BOUND)
