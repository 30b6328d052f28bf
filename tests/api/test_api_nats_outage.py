"""A NATS outage under a running API costs nothing: creates, deletes and grants answer at
once, the outbox grows, and when nats-server comes back (same port, same JetStream store)
every entry arrives on its stream once and in order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from tests.api.helpers import PROVIDER, Api, ApiFactory, ready_proxy, until
from tests.faults.servers import Restartable

from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.messaging.jetstream import connect_nats, ensure_streams
from proxyfleet.common.wire import subjects

PROMPT = 2.0
"""Seconds a request may take while NATS is down (it takes milliseconds: no NATS wait)."""


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Restartable]:
    # a server of this test's own, on a port and folder that survive its restart
    server = Restartable("nats", tmp_path / "nats", tmp_path / "nats.log")
    server.start()
    yield server
    server.stop()


async def _timed(call: Awaitable[httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await call
    return response, time.monotonic() - started


async def _stream_ids(nc: NatsClient, stream: str, after: int) -> list[str]:
    """The Nats-Msg-Id of every message of `stream` past sequence `after`, in order."""
    js = nc.jetstream()
    last = (await js.stream_info(stream)).state.last_seq
    ids = []
    for seq in range(after + 1, last + 1):
        msg = await js.get_msg(stream, seq)
        ids.append((msg.headers or {}).get("Nats-Msg-Id", ""))
    return ids


async def test_nats_outage_costs_nothing_and_the_outbox_drains_in_order(
    start_api: ApiFactory, redis_url: str, redis_client: aioredis.Redis, own_nats: Restartable
) -> None:
    api: Api = await start_api(common=CommonSettings(redis_url=redis_url, nats_url=own_nats.url))
    backends = api.services.backends
    for i in range(8):
        await ready_proxy(api, f"pout{i}")
    outbox = backends.registry.outbox

    async def drained() -> bool:
        return await outbox.length() == 0

    await until(drained, 10, "the outbox to drain before the outage")
    watcher = await connect_nats(own_nats.url, "outage-test")
    await ensure_streams(watcher.jetstream())
    seq_before = {
        s: (await watcher.jetstream().stream_info(s)).state.last_seq
        for s in (subjects.EVENT_STREAM, subjects.INTENT_STREAM)
    }
    await watcher.close()

    own_nats.stop()

    async def disconnected() -> bool:
        return not backends.nats.is_connected

    await until(disconnected, 5, "the API to see NATS gone")

    slowest = 0.0
    statuses: list[int] = []
    for _ in range(5):
        r, took = await _timed(api.admin.post("/v1/proxies", json={"provider": PROVIDER}))
        statuses.append(r.status_code)
        slowest = max(slowest, took)
    for _ in range(6):
        r, took = await _timed(api.client.post("/v1/leases", json={"ttl": 30}))
        statuses.append(r.status_code)
        slowest = max(slowest, took)
        lease = r.json()
        r, took = await _timed(
            api.client.post(
                f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
            )
        )
        statuses.append(r.status_code)
        slowest = max(slowest, took)
    for _ in range(2):  # the second delete asks for the intent again, outside the outbox
        r, took = await _timed(api.admin.delete("/v1/proxies/pout7"))
        statuses.append(r.status_code)
        slowest = max(slowest, took)
    assert all(200 <= s < 300 for s in statuses), statuses
    assert slowest < PROMPT, f"a request took {slowest:.2f} s while NATS was down"

    pending = await outbox.peek()
    # 5 creates (event + intent), 6 grants, 6 releases, 1 delete (event + intent)
    assert len(pending) == 5 * 2 + 6 + 6 + 2
    ready = await api.anon.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["nats"] is False
    assert ready.json()["outbox_length"] == len(pending)
    assert ready.json()["outbox_oldest_age"] >= 0

    await asyncio.sleep(0.3)  # the relay keeps waiting; nothing leaves the outbox meanwhile
    assert await outbox.length() == len(pending)
    # Nothing went into the client's reconnect buffer, which drops messages once full.
    assert backends.nats.pending_data_size == 0

    own_nats.start()
    await until(drained, 20, "the outbox to drain after the outage")

    expected: dict[str, list[str]] = {subjects.EVENT_STREAM: [], subjects.INTENT_STREAM: []}
    for entry in pending:
        is_intent = entry.subject.startswith(subjects.INTENT_PREFIX)
        expected[subjects.INTENT_STREAM if is_intent else subjects.EVENT_STREAM].append(
            entry.msg_id
        )
    watcher = await connect_nats(own_nats.url, "outage-test")
    try:
        for stream, ids in expected.items():
            assert await _stream_ids(watcher, stream, seq_before[stream]) == ids, stream
    finally:
        await watcher.close()
    ready = await api.anon.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["outbox_length"] == 0
