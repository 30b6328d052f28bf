"""A plain-HTTP upload larger than a request head may be (--max-header-bytes), all of it
received with its head: once the answer is relayed and curl exits, the gateway sees the
client close, ends the connection and releases its lease (not after --keepalive-idle)."""

from __future__ import annotations

from pathlib import Path

from tests.api.helpers import Recorder
from tests.gateway.conftest import StartGateway, curl, eventually
from tests.gateway.reading_origin import reading_origin

UP, DOWN = 70_001, 250_003
"""Over the gateway's 16 KB head limit, under what one read takes in; an answer larger
than a socket's buffers."""
BOUND = 2.0
"""How long after curl exits the lease may still be held (keepalive_idle is far longer)."""


async def test_after_a_large_upload_the_client_s_close_ends_the_connection_and_its_lease(
    start_gateway: StartGateway, fleet: dict[str, int], events: Recorder, tmp_path: Path
) -> None:
    gw = await start_gateway(cooldown=0.0, keepalive_idle=60.0)
    upload = tmp_path / "upload"
    upload.write_bytes(b"u" * UP)
    async with reading_origin(DOWN) as port:
        got = await curl(
            gw.url(), f"http://127.0.0.1:{port}/", "--data-binary", f"@{upload}", "-H", "Expect:"
        )
    assert got.code == 0, got.stderr
    assert len(got.body) == DOWN
    lease_id = got.header("X-Proxyfleet-Lease-Id")[0]
    released = await events.event("lease.released", within=BOUND, lease_id=lease_id)
    assert (released.data.bytes_up, released.data.bytes_down) == (UP, DOWN)
    await eventually(lambda: len(gw.tunnels) == 0, within=BOUND)
