"""The providers' indexes (`pf:provider:<name>`): exactly each provider's proxies that are
not deleted, through create, adopt, transitions, delete and the deleted hash's expiry; a
provider's page reads no other provider's proxy; a registry from before the indexes is
read as before until they are built, once. Real Redis."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase


async def indexed(client: aioredis.Redis, provider: str) -> list[str]:
    return cast(list[str], await client.zrange(f"pf:provider:{provider}", 0, -1))


async def live_count(registry: ProxyRegistry, provider: str) -> int:
    counts = await registry.count_by_phase(provider)
    return sum(n for phase, n in counts.items() if phase is not Phase.DELETED)


async def all_pages(registry: ProxyRegistry, provider: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = ""
    while True:
        page, cursor = await registry.provider_page(provider, cursor=cursor, limit=limit)
        seen += [p.id for p in page]
        if not cursor:
            return seen


async def hgetalls(client: aioredis.Redis) -> int:
    stats = cast(dict[str, dict[str, int]], await client.info("commandstats"))
    return int(stats.get("cmdstat_hgetall", {}).get("calls", 0))


async def test_the_index_follows_create_adopt_transitions_and_delete(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.index_providers() == 0  # an empty store: built at once
    await registry.create(make_proxy("p1", clock))
    await registry.create(make_proxy("p2", clock, provider="kvm"))
    await registry.create(make_proxy("p3", clock, phase=Phase.DELETED))  # an import: not live
    assert await indexed(redis_client, "local") == ["p1"]
    assert await indexed(redis_client, "kvm") == ["p2"]
    for to in (Phase.PROVISIONING, Phase.BOOTING, Phase.READY, Phase.UNHEALTHY, Phase.DELETING):
        await registry.transition("p1", to)
        assert await indexed(redis_client, "local") == ["p1"], to
    await registry.update("p1", fail_streak=1)  # a field update: no move
    assert await indexed(redis_client, "local") == ["p1"]
    await registry.transition("p1", Phase.DELETED)
    assert await indexed(redis_client, "local") == []
    assert await live_count(registry, "local") == 0

    assert await registry.adopt(make_proxy("p4", clock, phase=Phase.BOOTING))
    assert await registry.adopt(make_proxy("p5", clock, provider="kvm", phase=Phase.PROVISIONING))
    assert not await registry.adopt(make_proxy("p4", clock, phase=Phase.BOOTING))  # exists
    assert not await registry.adopt(make_proxy("p1", clock, phase=Phase.BOOTING))  # deleted
    assert await indexed(redis_client, "local") == ["p4"]
    assert await indexed(redis_client, "kvm") == ["p2", "p5"]
    await registry.transition("p2", Phase.FAILED)
    assert await indexed(redis_client, "kvm") == ["p2", "p5"]  # failed still holds resources
    for provider in ("local", "kvm"):
        assert len(await indexed(redis_client, provider)) == await live_count(registry, provider)

    assert [p.id for p in (await registry.provider_page("local"))[0]] == ["p4"]
    booting, _ = await registry.provider_page("kvm", phase=Phase.PROVISIONING)
    assert [p.id for p in booting] == ["p5"]
    # Deleted proxies are listed only from every proxy, as before (the API's include_deleted).
    everything, _ = await registry.page(provider="local")
    assert [p.id for p in everything] == ["p1", "p3", "p4"]
    gone, _ = await registry.page(provider="local", phase=Phase.DELETED)
    assert [p.id for p in gone] == ["p1", "p3"]


async def test_a_deleted_proxy_past_its_ttl_leaves_nothing_in_the_index(
    redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    registry = ProxyRegistry(redis_client, clock, deleted_ttl=1)
    await make_ready(registry, make_proxy("p1", clock))
    await make_ready(registry, make_proxy("p2", clock))
    await registry.transition("p1", Phase.DELETING)
    await registry.transition("p1", Phase.DELETED)
    assert await indexed(redis_client, "local") == ["p2"]
    deadline = time.monotonic() + 10
    while await redis_client.exists("pf:proxy:p1"):  # Redis expires it (1 s TTL)
        assert time.monotonic() < deadline, "the deleted proxy's hash did not expire"
        await asyncio.sleep(0.1)
    assert await indexed(redis_client, "local") == ["p2"]
    assert [p.id for p in (await registry.provider_page("local"))[0]] == ["p2"]


async def test_a_provider_page_drops_what_an_older_version_left_in_the_index(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await make_ready(registry, make_proxy("p2", clock))
    await registry.transition("p2", Phase.DELETING)
    await registry.transition("p2", Phase.DELETED)
    # As a version without the index would leave them: a deleted proxy still in it, and the
    # id of a hash that has expired since.
    await redis_client.zadd("pf:provider:local", {"p2": 0, "p0": 0})
    assert await all_pages(registry, "local", limit=1) == ["p1"]
    assert await indexed(redis_client, "local") == ["p1"]


async def test_a_provider_page_reads_only_that_providers_proxies(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    others = [make_proxy(f"k{i:04}", clock, provider="kvm") for i in range(500)]
    assert len((await registry.create_many(others)).ids) == 500
    mine = [make_proxy(f"k{i:04}x", clock) for i in range(0, 500, 50)]  # among the others
    assert len((await registry.create_many(mine)).ids) == 10
    # Nothing to build: the first create into the empty store said so (the marker).
    assert await redis_client.exists("pf:provider_index")
    assert await registry.index_providers() is None
    assert await all_pages(registry, "local", limit=3) == [p.id for p in mine]
    await redis_client.config_resetstat()
    assert await all_pages(registry, "local", limit=10) == [p.id for p in mine]
    assert await hgetalls(redis_client) == 10  # one HGETALL per proxy of its own, no other


async def test_a_registry_from_before_the_index_is_read_as_before_then_indexed_once(
    redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    old = ProxyRegistry(redis_client, clock)
    for i in range(7):
        await make_ready(old, make_proxy(f"p{i}", clock, provider="local" if i % 2 else "kvm"))
    await old.transition("p3", Phase.DELETING)
    await old.transition("p3", Phase.DELETED)
    await redis_client.delete("pf:provider:local", "pf:provider:kvm", "pf:provider_index")

    registry = ProxyRegistry(redis_client, clock)
    assert await all_pages(registry, "local", limit=2) == ["p1", "p5"]  # from every proxy
    await registry.create(make_proxy("p7", clock))  # indexed already: the scripts keep it
    assert await registry.index_providers(batch=3) == 6  # p0-p6, deleted p3 left out
    assert await indexed(redis_client, "local") == ["p1", "p5", "p7"]
    assert await indexed(redis_client, "kvm") == ["p0", "p2", "p4", "p6"]
    assert await redis_client.exists("pf:provider_index")
    assert await registry.index_providers() is None  # once per store
    assert await all_pages(registry, "local", limit=2) == ["p1", "p5", "p7"]
    await redis_client.config_resetstat()
    assert await all_pages(registry, "local", limit=3) == ["p1", "p5", "p7"]
    assert await hgetalls(redis_client) == 3
    # Another process (the API) sees the marker and reads the index too.
    api = ProxyRegistry(redis_client, clock)
    await redis_client.config_resetstat()
    assert [p.id for p in (await api.page(provider="kvm", exclude_phase=Phase.DELETED))[0]] == [
        "p0",
        "p2",
        "p4",
        "p6",
    ]
    assert await hgetalls(redis_client) == 4
