"""Bytes the gateway relays, counted with real curl through real Squids: on the lease when
it is released (the store's record and its `lease.released` event), in the client's usage
of the day, and in the per-client counter."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from prometheus_client import REGISTRY
from tests.api.helpers import CLIENT_NAME, Recorder
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, curl, eventually
from tests.gateway.reading_origin import reading_origin

from proxyfleet.common.store import LeaseStore
from proxyfleet.common.store.client_usage import ClientUsageStore
from proxyfleet.gateway.quota import utc_day

UP, DOWN = 70_001, 250_003
"""An upload and a download of sizes no head is near."""


def _client_bytes(direction: str) -> float:
    labels = {"client": CLIENT_NAME, "direction": direction}
    return REGISTRY.get_sample_value("proxyfleet_gateway_client_bytes_total", labels) or 0.0


async def test_a_plain_request_s_bytes_are_on_its_lease_and_the_client_s_day(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    lease_store: LeaseStore,
    events: Recorder,
    redis_client: object,
    tmp_path: Path,
) -> None:
    gw = await start_gateway(cooldown=0.0, limits_sync_interval=0.05)
    upload = tmp_path / "upload"
    upload.write_bytes(b"u" * UP)
    before = _client_bytes("up"), _client_bytes("down")
    async with reading_origin(DOWN) as port:
        got = await curl(
            gw.url(), f"http://127.0.0.1:{port}/", "--data-binary", f"@{upload}", "-H", "Expect:"
        )
    assert got.code == 0, got.stderr
    assert len(got.body) == DOWN
    lease_id = got.header("X-Proxyfleet-Lease-Id")[0]
    released = await events.event("lease.released", lease_id=lease_id)
    # the bodies exactly: the gateway's heads (and the origin's) are not counted
    assert (released.data.bytes_up, released.data.bytes_down) == (UP, DOWN)
    found = await lease_store.get(lease_id)
    assert found is not None
    lease, state = found
    assert (state, lease.bytes_up, lease.bytes_down) == ("released", UP, DOWN)
    usage = ClientUsageStore(redis_client)  # type: ignore[arg-type]
    today = utc_day(time.time())
    rows: list[tuple[int, int, int]] = []

    async def synced() -> bool:
        day = (await usage.days(CLIENT_NAME, [today]))[0]
        rows.append((day.bytes_up, day.bytes_down, day.connections))
        return rows[-1] == (UP, DOWN, 1)

    for _ in range(200):  # bounded: the next sync comes within 0.05 s
        if await synced():
            break
        await asyncio.sleep(0.01)
    assert rows[-1] == (UP, DOWN, 1)
    # the counters are added to in the same batch, just before
    assert (_client_bytes("up") - before[0], _client_bytes("down") - before[1]) == (UP, DOWN)


async def test_a_tunnel_s_bytes_match_what_curl_transferred_within_the_tls_overhead(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    events: Recorder,
    target: TargetServer,
) -> None:
    gw = await start_gateway(cooldown=0.0)
    got = await curl(
        gw.url(), target.url, "-w", "%{size_request} %{size_header} %{size_download}",
        ca_file=target.ca_file,
    )  # fmt: skip
    assert got.code == 0, got.stderr
    lease_id = got.header("X-Proxyfleet-Lease-Id")[0]
    released = await events.event("lease.released", lease_id=lease_id)
    up, down = released.data.bytes_up, released.data.bytes_down
    assert up is not None
    assert down is not None
    body = got.body.decode()
    request, headers, download = (int(n) for n in body[body.rindex("}") + 1 :].split())
    # TLS inside the tunnel: its handshake and record framing come on top of the HTTP
    # bytes curl counts (the gateway's own CONNECT and 200 are not counted), a few KB
    assert request <= up <= request + 4096
    assert download + headers - 200 <= down <= download + headers + 8192
    await eventually(lambda: len(gw.tunnels) == 0)
