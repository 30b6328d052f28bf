"""The relay against real Redis and NATS: a crash anywhere between "written" and "acked"
loses no event and stores none twice on JetStream."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import nats
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from tests.common.factories import make_proxy

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.messaging.jetstream import ensure_streams, event_decoder
from proxyfleet.common.messaging.relay import OutboxRelay, RelaySettings
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.outbox import GROUP
from proxyfleet.common.wire import subjects

FAST = RelaySettings(idle=0.02, claim_idle=0.2, claim_every=0.05, ack_timeout=2.0)


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NatsClient]:
    client = await nats.connect(nats_url)
    await ensure_streams(client.jetstream())
    yield client
    await client.close()


@pytest.fixture
def js(nc: NatsClient) -> JetStreamContext:
    return nc.jetstream()


async def _stored(js: JetStreamContext) -> int:
    """Messages JetStream holds in both streams (duplicates dropped by Nats-Msg-Id are not)."""
    events = await js.stream_info(subjects.EVENT_STREAM)
    intents = await js.stream_info(subjects.INTENT_STREAM)
    return events.state.messages + intents.state.messages


@contextlib.asynccontextmanager
async def _running(*relays: OutboxRelay) -> AsyncIterator[None]:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(r.run(stop)) for r in relays]
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)


async def _until(check: Callable[[], Any], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def _pending_proxies(registry: ProxyRegistry, clock: ManualClock, n: int) -> None:
    for i in range(n):
        assert await registry.create(make_proxy(f"p{time.time_ns()}{i}", clock))


async def _drained(registry: ProxyRegistry) -> bool:
    return await registry.outbox.length() == 0


async def test_events_written_while_no_relay_ran_reach_jetstream_exactly_once(
    registry: ProxyRegistry, clock: ManualClock, nc: NatsClient, js: JetStreamContext
) -> None:
    seen: list[Msg] = []

    async def on_msg(msg: Msg) -> None:
        seen.append(msg)

    await nc.subscribe(f"{subjects.EVENT_PREFIX}.proxy.pending", cb=on_msg)
    before = await _stored(js)
    await _pending_proxies(registry, clock, 3)  # "written", then the writer died: no relay
    relay = OutboxRelay(registry.outbox, nc, service="test", settings=FAST)
    async with _running(relay):
        await _until(lambda: _drained(registry), "the outbox to drain")
        assert await relay.ready()
    assert await _stored(js) - before == 6  # 3 events, 3 create intents
    assert relay.relayed == 6
    await nc.flush()
    assert sorted(event_decoder.decode(m.data).proxy_id for m in seen) == sorted(
        {event_decoder.decode(m.data).proxy_id for m in seen}
    )
    assert all(m.headers and m.headers["Nats-Msg-Id"].startswith("e") for m in seen)


async def test_two_relays_sharing_the_group_publish_each_entry_once(
    registry: ProxyRegistry, clock: ManualClock, nc: NatsClient, js: JetStreamContext
) -> None:
    published: list[str] = []

    async def on_msg(msg: Msg) -> None:
        assert msg.headers is not None
        published.append(msg.headers["Nats-Msg-Id"])

    await nc.subscribe("proxyfleet.>", cb=on_msg)  # core: sees every publish, copies too
    before = await _stored(js)
    one = OutboxRelay(registry.outbox, nc, service="one", settings=FAST)
    two = OutboxRelay(registry.outbox, nc, service="two", settings=FAST)
    async with _running(one, two):
        await _pending_proxies(registry, clock, 40)
        await _until(lambda: _drained(registry), "the outbox to drain")
    await nc.flush()
    assert one.relayed + two.relayed == 80
    assert len(published) == 80
    assert len(set(published)) == 80
    assert await _stored(js) - before == 80


async def test_entries_pending_on_a_dead_relay_are_claimed_and_published(
    registry: ProxyRegistry,
    clock: ManualClock,
    nc: NatsClient,
    js: JetStreamContext,
    redis_client: aioredis.Redis,
) -> None:
    await registry.outbox.ensure_group()
    await _pending_proxies(registry, clock, 2)
    # A relay read them, then died before publishing anything.
    read: Any = await redis_client.xreadgroup(GROUP, "dead", {registry.outbox.key: ">"}, count=10)
    assert len(read[0][1]) == 4
    assert await registry.outbox.pending() == 4
    before = await _stored(js)
    relay = OutboxRelay(registry.outbox, nc, service="heir", settings=FAST)
    async with _running(relay):
        await _until(lambda: _drained(registry), "the claimed entries to be published")
    assert await _stored(js) - before == 4
    assert await registry.outbox.pending() == 0


async def test_a_relay_that_died_after_publishing_before_acking_stores_nothing_twice(
    registry: ProxyRegistry,
    clock: ManualClock,
    nc: NatsClient,
    js: JetStreamContext,
    redis_client: aioredis.Redis,
) -> None:
    await registry.outbox.ensure_group()
    await _pending_proxies(registry, clock, 2)
    read = await registry.outbox.read("dead", 10)
    before = await _stored(js)
    for e in read:  # published as the dead relay did, never acked in Redis
        await js.publish(e.subject, e.body, headers={"Nats-Msg-Id": e.msg_id})
    assert await _stored(js) - before == 4
    relay = OutboxRelay(registry.outbox, nc, service="heir", settings=FAST)
    async with _running(relay):
        await _until(lambda: _drained(registry), "the claimed entries to be acked")
    assert relay.relayed == 4  # published again ...
    assert await _stored(js) - before == 4  # ... and dropped by JetStream as duplicates


async def test_a_relay_with_redis_gone_is_not_ready_and_keeps_running(
    nc: NatsClient, clock: ManualClock
) -> None:
    gone = aioredis.Redis(host="127.0.0.1", port=1, decode_responses=True)
    relay = OutboxRelay(ProxyRegistry(gone, clock).outbox, nc, service="t", settings=FAST)
    async with _running(relay):
        await asyncio.sleep(0.2)
        assert not await relay.ready()
    await gone.aclose()
