"""The create script's bounds against real Redis: max_proxies per provider (atomic, so
concurrent creates cannot pass it together) and idempotency keys."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.store import Idempotency, ProxyRegistry, connect_redis
from proxyfleet.common.wire.models import Phase

_ids = itertools.count()


def batch(clock: ManualClock, n: int, provider: str = "local") -> list:  # type: ignore[type-arg]
    return [make_proxy(f"p{next(_ids)}", clock, provider=provider) for _ in range(n)]


async def test_concurrent_creates_never_pass_max_proxies(
    redis_url: str, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    # several clients, as several API replicas would be: the check is in the script
    clients = [connect_redis(redis_url) for _ in range(4)]
    registries = [ProxyRegistry(c, clock) for c in clients]
    try:

        async def create(i: int) -> int | str:
            try:
                made = await registries[i % 4].create_many(batch(clock, 3), max_proxies=10)
            except Conflict as exc:
                return str(exc.code)
            return len(made.ids)

        results = await asyncio.gather(*(create(i) for i in range(24)))
    finally:
        for c in clients:
            await c.aclose()
    made = [r for r in results if isinstance(r, int)]
    assert made == [3, 3, 3]  # all or nothing per create
    assert [r for r in results if isinstance(r, str)] == ["max_proxies"] * 21
    registry = ProxyRegistry(redis_client, clock)
    assert await registry.size() == 9
    assert (await registry.create_many(batch(clock, 1), max_proxies=10)).ids
    with pytest.raises(Conflict, match=r"provider local has 10 proxies .* max_proxies of 10"):
        await registry.create_many(batch(clock, 1), max_proxies=10)
    # another provider has a count of its own
    assert (await registry.create_many(batch(clock, 2, "other"), max_proxies=2)).ids


async def test_failed_and_deleted_proxies_free_their_place(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    first, second = (await registry.create_many(batch(clock, 2), max_proxies=2)).ids
    with pytest.raises(Conflict, match="max_proxies"):
        await registry.create_many(batch(clock, 1), max_proxies=2)
    await registry.transition(first, Phase.FAILED, reason="boom")
    await registry.transition(second, Phase.DELETING)
    with pytest.raises(Conflict, match="has 1 proxies"):  # deleting still holds resources
        await registry.create_many(batch(clock, 2), max_proxies=2)
    await registry.transition(second, Phase.DELETED)
    assert len((await registry.create_many(batch(clock, 2), max_proxies=2)).ids) == 2


async def test_an_idempotency_key_replays_and_refuses_another_body(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    key = Idempotency("ops:k1", "fp-a", ttl=86_400)
    first = await registry.create_many(batch(clock, 3), idempotency=key)
    assert not first.replayed
    again = await registry.create_many(batch(clock, 3), idempotency=key)
    assert (again.ids, again.replayed) == (first.ids, True)
    assert await registry.size() == 3
    with pytest.raises(Conflict) as caught:
        await registry.create_many(batch(clock, 3), idempotency=Idempotency("ops:k1", "fp-b", 1))
    assert caught.value.code == "idempotency_key_reused"
    assert await registry.size() == 3
    assert 86_000 < await redis_client.ttl("pf:idem:ops:k1") <= 86_400
    # a replay is answered even when the limit is reached since
    replay = await registry.create_many(batch(clock, 3), max_proxies=3, idempotency=key)
    assert replay.ids == first.ids


async def test_concurrent_retries_with_one_key_create_once(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    key = Idempotency("ops:k2", "fp", ttl=60)
    results = await asyncio.gather(
        *(registry.create_many(batch(clock, 2), idempotency=key) for _ in range(10))
    )
    assert len({tuple(r.ids) for r in results}) == 1
    assert sum(not r.replayed for r in results) == 1
    assert await registry.size() == 2
