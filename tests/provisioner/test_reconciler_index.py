"""The reconciler reads its own provider's proxies only (the provider's index), however many
another provider has, and builds the indexes first on a registry from before them. Counted
in Redis's own command statistics, not timed. Real Redis and NATS, no provider."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import msgspec
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.runner.reconciler import PAGE_SIZE, Reconciler
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import CreateIntent, Phase, Proxy

from .helpers import fast_settings

OTHERS = 2000
MINE = 10
assert MINE <= PAGE_SIZE  # one page: the counts below are one read of each proxy


def pending(pid: str, provider: str, clock: ManualClock) -> Proxy:
    now = clock.now()
    return Proxy(
        id=pid,
        provider=provider,
        zone="local",
        phase=Phase.PENDING,
        gen=1,
        username="u",
        password="secret",
        created_at=now,
        updated_at=now,
    )


async def seed(registry: ProxyRegistry, provider: str, other: str, clock: ManualClock) -> list[str]:
    """OTHERS pending proxies of `other`, MINE of `provider` spread among them (in id order);
    every one stale. Returns the ids of `provider`'s."""
    theirs = [pending(f"p{i:05}", other, clock) for i in range(OTHERS)]
    for first in range(0, OTHERS, 500):
        assert len((await registry.create_many(theirs[first : first + 500])).ids) == 500
    step = OTHERS // MINE
    mine = [pending(f"p{i:05}m", provider, clock) for i in range(0, OTHERS, step)]
    assert len((await registry.create_many(mine)).ids) == MINE
    clock.advance(60)
    return [p.id for p in mine]


async def command_calls(client: aioredis.Redis, name: str) -> int:
    stats = cast(dict[str, dict[str, int]], await client.info("commandstats"))
    return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))


class Intents:
    """Create intents seen on core NATS (a JetStream publish reaches core subscribers)."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    async def on_msg(self, msg: Msg) -> None:
        self.ids.append(msgspec.json.decode(msg.data, type=CreateIntent).proxy_id)

    async def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 10
        while len(self.ids) < count:
            assert time.monotonic() < deadline, f"{len(self.ids)} of {count} intents"
            await asyncio.sleep(0.05)


async def test_the_reconciler_reads_no_proxy_of_another_provider(
    provider_name: str, redis_client: aioredis.Redis, nc: NatsClient, publisher: Publisher
) -> None:
    clock = ManualClock()
    registry = ProxyRegistry(redis_client, clock)
    assert await registry.index_providers() == 0  # an empty store: built at once
    mine = await seed(registry, provider_name, f"x{provider_name}", clock)
    settings = fast_settings(provider_name, stale_after=5)
    reconciler = Reconciler(registry=registry, publisher=publisher, settings=settings, clock=clock)
    intents = Intents()
    sub = await nc.subscribe(f"proxyfleet.intents.{provider_name}.create", cb=intents.on_msg)
    try:
        await redis_client.config_resetstat()
        assert await reconciler.reconcile_once() == MINE
        assert await command_calls(redis_client, "hgetall") == MINE  # its own, no other
        assert await command_calls(redis_client, "zrangebylex") == 1  # one page
        await intents.wait_for(MINE)
        assert sorted(intents.ids) == mine
    finally:
        await sub.unsubscribe()


async def test_the_reconciler_indexes_a_registry_from_before_the_index_once(
    provider_name: str, redis_client: aioredis.Redis, publisher: Publisher
) -> None:
    clock = ManualClock()
    registry = ProxyRegistry(redis_client, clock)
    other = f"x{provider_name}"
    await seed(registry, provider_name, other, clock)
    # As a version without the indexes left it: no index, no marker.
    await redis_client.delete(
        f"pf:provider:{provider_name}", f"pf:provider:{other}", "pf:provider_index"
    )
    settings = fast_settings(provider_name, stale_after=5)
    fresh = ProxyRegistry(redis_client, clock)  # a provisioner started on that registry
    reconciler = Reconciler(registry=fresh, publisher=publisher, settings=settings, clock=clock)

    await redis_client.config_resetstat()
    assert await reconciler.reconcile_once() == MINE
    assert await command_calls(redis_client, "hmget") == OTHERS + MINE  # the build, once
    assert await command_calls(redis_client, "hgetall") == MINE
    assert await redis_client.zcard(f"pf:provider:{other}") == OTHERS
    assert await redis_client.zcard(f"pf:provider:{provider_name}") == MINE

    await redis_client.config_resetstat()
    assert await reconciler.reconcile_once() == MINE  # still stale: published again
    assert await command_calls(redis_client, "hmget") == 0  # built: the marker says so
    assert await command_calls(redis_client, "hgetall") == MINE
