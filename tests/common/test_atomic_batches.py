"""The relay's batches (messaging/atomic.py) against a real NATS: an atomic batch is stored
whole; one published again after its ack was lost goes one by one, its duplicates answered
as such; a stream without atomic batches still gets every message, acked one by one; on a
stream of one replica a batch goes in order with the last message acked."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from nats.aio.client import Client as NatsClient
from nats.js.api import StorageType, StreamConfig

from proxyfleet.common.messaging.atomic import MAX_MESSAGES, Batches
from proxyfleet.common.store.outbox import OutboxEntry

StreamFactory = Callable[[bool], Awaitable[str]]


@pytest.fixture
async def make_stream(nc: NatsClient) -> AsyncIterator[StreamFactory]:
    """Streams of this test's own on `atomic.<name>.>`, deleted after it."""
    js, made = nc.jetstream(), []

    async def make(atomic: bool) -> str:
        name = "T" + secrets.token_hex(4).upper()
        await js.add_stream(
            StreamConfig(
                name=name,
                subjects=[f"atomic.{name}.>"],
                storage=StorageType.MEMORY,
                duplicate_window=120,
                allow_atomic=atomic,
            )
        )
        made.append(name)
        return name

    yield make
    for name in made:
        await js.delete_stream(name)


def _entries(stream: str, first: int, count: int) -> list[OutboxEntry]:
    return [
        OutboxEntry(f"{i}-0", f"atomic.{stream}.x", f"m{i}", b'{"n":%d}' % i)
        for i in range(first, first + count)
    ]


async def _ids(nc: NatsClient, stream: str) -> list[str]:
    js = nc.jetstream()
    state = (await js.stream_info(stream)).state
    out = []
    for seq in range(state.first_seq, state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        out.append((msg.headers or {}).get("Nats-Msg-Id", ""))
    return out


async def test_a_batch_is_stored_whole_and_again_adds_nothing(
    nc: NatsClient, make_stream: StreamFactory
) -> None:
    stream = await make_stream(True)
    batches = Batches(nc, ack_timeout=5.0, atomic=True)
    await batches.publish(stream, _entries(stream, 0, 10))
    assert await _ids(nc, stream) == [f"m{i}" for i in range(10)]
    # Published again after a lost ack, with newer entries after it: JetStream refuses the
    # atomic batch (a duplicate id), so it goes one by one; each message once, in order.
    await batches.publish(stream, _entries(stream, 5, 10))
    assert await _ids(nc, stream) == [f"m{i}" for i in range(15)]


async def test_more_than_a_batch_goes_in_chunks(nc: NatsClient, make_stream: StreamFactory) -> None:
    stream = await make_stream(True)
    await Batches(nc, ack_timeout=5.0, atomic=True).publish(
        stream, _entries(stream, 0, MAX_MESSAGES + 3)
    )
    assert len(await _ids(nc, stream)) == MAX_MESSAGES + 3


async def test_a_stream_without_atomic_batches_gets_every_message(
    nc: NatsClient, make_stream: StreamFactory
) -> None:
    stream = await make_stream(False)
    await Batches(nc, ack_timeout=5.0, atomic=True).publish(stream, _entries(stream, 0, 4))
    assert await _ids(nc, stream) == ["m0", "m1", "m2", "m3"]


async def test_a_single_replica_stream_takes_the_batch_in_order_with_one_ack(
    nc: NatsClient, make_stream: StreamFactory
) -> None:
    stream = await make_stream(True)
    batches = Batches(nc, ack_timeout=5.0)  # asks the stream: one replica
    await batches.publish(stream, _entries(stream, 0, 6))
    await batches.publish(stream, _entries(stream, 3, 6))  # again, and more
    assert await _ids(nc, stream) == [f"m{i}" for i in range(9)]
