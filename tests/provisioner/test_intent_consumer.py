"""The intent consumer (FastStream pull subscribers on the shared durable) on a real NATS,
with a scripted handler in place of the provisioner's: what it acks, NAKs and terminates,
how it heartbeats, bounds and shares the work, and how it stops."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY

from proxyfleet.common.messaging.jetstream import connect_nats
from proxyfleet.common.runner import IntentConsumer, RunnerSettings
from proxyfleet.common.runner.verdict import Delivery, Verdict
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import Intent

from .helpers import fast_settings, wait_until

Script = Callable[[Intent, Delivery], Awaitable[Verdict]]


@dataclass
class ScriptedHandler:
    """Records every delivery it gets and answers with `script`."""

    script: Script
    seen: list[tuple[str, int, float]] = field(default_factory=list)
    """(proxy id, delivery number, monotonic time) of every call."""
    active: int = 0
    most_active: int = 0

    async def handle(self, intent: Intent, delivery: Delivery) -> Verdict:
        self.seen.append((intent.proxy_id, delivery.number, time.monotonic()))
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            return await self.script(intent, delivery)
        finally:
            self.active -= 1

    def deliveries_of(self, proxy_id: str) -> list[tuple[int, float]]:
        return [(number, at) for pid, number, at in self.seen if pid == proxy_id]


async def ack(_: Intent, __: Delivery) -> Verdict:
    return Verdict.ack()


ConsumerFactory = Callable[[ScriptedHandler, RunnerSettings], Awaitable[IntentConsumer]]


@pytest.fixture
async def start_consumer(nats_url: str) -> AsyncIterator[ConsumerFactory]:
    """Consumers on connections of their own (as replicas have); all stopped at the end."""
    running: list[tuple[asyncio.Event, asyncio.Task[None], NatsClient]] = []

    async def start(handler: ScriptedHandler, settings: RunnerSettings) -> IntentConsumer:
        nc = await connect_nats(nats_url, "consumer-tests")
        consumer = IntentConsumer(nc, handler, settings, consumer_check_interval=0.2)
        stop = asyncio.Event()
        running.append((stop, asyncio.create_task(consumer.run(stop)), nc))

        async def ready() -> bool:
            return consumer.running

        await wait_until(ready, 5.0, "the consumer to run")
        return consumer

    yield start
    for stop, _, _ in running:
        stop.set()
    for _, task, nc in running:
        await asyncio.wait_for(task, 10)
        await nc.close()


def invalid_intents() -> float:
    labels = {"kind": "intent", "result": "invalid"}
    return REGISTRY.get_sample_value("proxyfleet_messages_handled_total", labels) or 0.0


async def publish_create(nc: NatsClient, provider: str, proxy_id: str) -> None:
    body = b'{"type":"create","proxy_id":"%s"}' % proxy_id.encode()
    await nc.jetstream().publish(subjects.intent_create(provider), body)


async def consumer_state(nc: NatsClient, provider: str) -> tuple[int, int, int]:
    """(unacked deliveries, redelivered, not yet delivered) of the provider's durable."""
    info = await nc.jetstream().consumer_info(
        subjects.INTENT_STREAM, subjects.provisioner_durable(provider)
    )
    return info.num_ack_pending, info.num_redelivered, info.num_pending or 0


async def test_temporary_failures_are_nakked_with_the_backoff_of_each_delivery(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    async def fail_twice(_: Intent, delivery: Delivery) -> Verdict:
        if delivery.number < 3:
            return Verdict.nak(0.3 * delivery.number)
        return Verdict.ack()

    handler = ScriptedHandler(fail_twice)
    await start_consumer(handler, fast_settings(provider_name, ack_wait=30.0))
    await publish_create(nc, provider_name, "p-nak")

    async def acked() -> bool:
        return len(handler.seen) == 3 and await consumer_state(nc, provider_name) == (0, 0, 0)

    await wait_until(acked, 10.0, "the third delivery to be acked")
    (n1, t1), (n2, t2), (n3, t3) = handler.deliveries_of("p-nak")
    assert (n1, n2, n3) == (1, 2, 3)
    # Each redelivery waits the delay its NAK asked for (ack_wait is far longer).
    assert t2 - t1 >= 0.3
    assert t3 - t2 >= 0.6


async def test_an_undecodable_intent_is_terminated_not_retried(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    invalid_before = invalid_intents()
    handler = ScriptedHandler(ack)
    await start_consumer(handler, fast_settings(provider_name, ack_wait=0.5))
    await nc.jetstream().publish(subjects.intent_create(provider_name), b"{not json")
    await publish_create(nc, provider_name, "p-after")

    async def both_settled() -> bool:
        return len(handler.seen) == 1 and await consumer_state(nc, provider_name) == (0, 0, 0)

    await wait_until(both_settled, 10.0, "both intents to be settled")
    await asyncio.sleep(1.0)  # two ack_waits: an unterminated intent would be back
    assert [pid for pid, _, _ in handler.seen] == ["p-after"]
    assert await consumer_state(nc, provider_name) == (0, 0, 0)
    assert invalid_intents() == invalid_before + 1


async def test_heartbeats_keep_a_long_intent_from_being_redelivered(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    async def slow(_: Intent, __: Delivery) -> Verdict:
        await asyncio.sleep(2.5)  # five ack_waits
        return Verdict.ack()

    handler = ScriptedHandler(slow)
    settings = fast_settings(provider_name, ack_wait=0.5, heartbeat_interval=0.1)
    await start_consumer(handler, settings)
    await start_consumer(ScriptedHandler(ack), settings)  # would get a redelivery
    await publish_create(nc, provider_name, "p-slow")

    async def acked() -> bool:
        return bool(handler.seen) and await consumer_state(nc, provider_name) == (0, 0, 0)

    await wait_until(acked, 10.0, "the slow intent to be acked")
    assert handler.deliveries_of("p-slow")[0][0] == 1
    assert len(handler.seen) == 1


async def test_replicas_share_the_durable_and_each_intent_is_handled_once(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    async def busy(_: Intent, __: Delivery) -> Verdict:
        await asyncio.sleep(0.05)
        return Verdict.ack()

    settings = fast_settings(provider_name, concurrency=2)
    first, second = ScriptedHandler(busy), ScriptedHandler(busy)
    await start_consumer(first, settings)
    await start_consumer(second, settings)
    ids = [f"p-{n}" for n in range(30)]
    for proxy_id in ids:
        await publish_create(nc, provider_name, proxy_id)

    async def all_acked() -> bool:
        done = len(first.seen) + len(second.seen) == len(ids)
        return done and await consumer_state(nc, provider_name) == (0, 0, 0)

    await wait_until(all_acked, 20.0, "every intent to be acked")
    handled = sorted(pid for h in (first, second) for pid, _, _ in h.seen)
    assert handled == sorted(ids)
    assert first.seen, "the first replica handled nothing"
    assert second.seen, "the second replica handled nothing"


async def test_no_more_than_concurrency_intents_are_fetched_at_once(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    release = asyncio.Event()

    async def held(_: Intent, __: Delivery) -> Verdict:
        await release.wait()
        return Verdict.ack()

    handler = ScriptedHandler(held)
    await start_consumer(handler, fast_settings(provider_name, concurrency=3, ack_wait=30.0))
    for n in range(6):
        await publish_create(nc, provider_name, f"p-{n}")

    async def three_running() -> bool:
        return handler.active == 3

    await wait_until(three_running, 10.0, "three intents in the handler")
    await asyncio.sleep(0.6)  # three fetch timeouts: a prefetching consumer would take more
    # Nothing fetched and held back: the other three wait in the stream for any replica.
    assert await consumer_state(nc, provider_name) == (3, 0, 3)
    release.set()

    async def all_acked() -> bool:
        return len(handler.seen) == 6 and await consumer_state(nc, provider_name) == (0, 0, 0)

    await wait_until(all_acked, 10.0, "every intent to be acked")
    assert handler.most_active == 3


async def test_an_intent_interrupted_by_a_stop_goes_to_another_replica_at_once(
    provider_name: str, nc: NatsClient, nats_url: str, start_consumer: ConsumerFactory
) -> None:
    async def endless(_: Intent, __: Delivery) -> Verdict:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    # ack_wait far beyond the test: only the NAK at stop can bring the intent back in time.
    settings = fast_settings(provider_name, ack_wait=60.0, shutdown_grace=0.3)
    stuck = ScriptedHandler(endless)
    own_nc = await connect_nats(nats_url, "stopping-replica")
    consumer = IntentConsumer(own_nc, stuck, settings)
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    await publish_create(nc, provider_name, "p-moved")

    async def started() -> bool:
        return bool(stuck.seen)

    await wait_until(started, 10.0, "the intent to reach the first replica")
    stop.set()
    await asyncio.wait_for(task, 5.0)
    assert not consumer.running
    assert own_nc.is_connected  # the broker left the process's connection alone
    await own_nc.close()

    taker = ScriptedHandler(ack)
    await start_consumer(taker, settings)

    async def taken() -> bool:
        return bool(taker.seen)

    await wait_until(taken, 10.0, "another replica to take the intent")
    assert taker.deliveries_of("p-moved")[0][0] == 2


async def test_a_deleted_durable_is_declared_again(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    handler = ScriptedHandler(ack)
    await start_consumer(handler, fast_settings(provider_name))
    js = nc.jetstream()
    await js.delete_consumer(subjects.INTENT_STREAM, subjects.provisioner_durable(provider_name))
    await publish_create(nc, provider_name, "p-later")

    async def handled() -> bool:
        return bool(handler.seen)

    await wait_until(handled, 10.0, "the intent to be handled on the new durable")
    assert handler.deliveries_of("p-later")[0][0] == 1


async def test_a_short_ack_wait_redelivers_nothing_with_more_intents_than_slots(
    provider_name: str, nc: NatsClient, start_consumer: ConsumerFactory
) -> None:
    """Intents waiting for a free slot stay in the stream, not fetched and unheartbeated:
    each intent outlasts ack_wait, yet none is delivered twice."""

    async def slow(_: Intent, __: Delivery) -> Verdict:
        await asyncio.sleep(1.2)  # two ack_waits
        return Verdict.ack()

    settings = fast_settings(provider_name, concurrency=2, ack_wait=0.6, heartbeat_interval=0.2)
    first, second = ScriptedHandler(slow), ScriptedHandler(slow)
    await start_consumer(first, settings)
    await start_consumer(second, settings)
    ids = [f"p-{n}" for n in range(10)]
    for proxy_id in ids:
        await publish_create(nc, provider_name, proxy_id)

    async def all_acked() -> bool:
        done = len(first.seen) + len(second.seen) >= len(ids)
        return done and (await consumer_state(nc, provider_name))[:2] == (0, 0)

    await wait_until(all_acked, 30.0, "every intent to be acked")
    handled = sorted(pid for h in (first, second) for pid, _, _ in h.seen)
    assert handled == sorted(ids)  # each once
    assert {n for h in (first, second) for _, n, _ in h.seen} == {1}  # first deliveries only
