"""The store's rules for an external proxy (one a static provider's source lists): it keeps
its scheme, a move to failed queues no delete, and only it comes back from failed."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire.models import Phase, Scheme


async def _delete_intents(redis_client: aioredis.Redis) -> list[str]:
    return [
        e.body.decode() for e in await Outbox(redis_client).peek() if e.subject.endswith(".delete")
    ]


async def test_a_failed_external_proxy_is_kept_and_may_serve_again(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    proxy = make_proxy("p1", clock, external=True, scheme=Scheme.SOCKS5H, password="p@ss:w")
    await make_ready(registry, proxy)
    await registry.transition("p1", Phase.FAILED, reason="proxy unreachable")
    assert await _delete_intents(redis_client) == []

    await registry.transition("p1", Phase.READY)
    back = await registry.get("p1")
    assert back is not None
    assert (back.phase, back.scheme, back.external) == (Phase.READY, Scheme.SOCKS5H, True)
    assert back.url() == "socks5h://u:p%40ss%3Aw@127.0.0.1:3128"


async def test_a_failed_managed_proxy_is_deleted_and_never_serves_again(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await registry.transition("p1", Phase.FAILED, reason="proxy unreachable")
    assert len(await _delete_intents(redis_client)) == 1
    with pytest.raises(Conflict, match="cannot move to ready"):
        await registry.transition("p1", Phase.READY)
    got = await registry.get("p1")
    assert got is not None
    assert (got.phase, got.scheme, got.external) == (Phase.FAILED, Scheme.HTTP, False)


async def _create_intent_ids(redis_client: aioredis.Redis) -> list[str]:
    return [e.msg_id for e in await Outbox(redis_client).peek() if e.subject.endswith(".create")]


async def _forget(registry: ProxyRegistry, proxy_id: str) -> None:
    await registry.transition(proxy_id, Phase.DELETING)
    await registry.transition(proxy_id, Phase.DELETED)


async def test_an_external_proxy_listed_again_takes_over_its_deleted_record(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    """Its id comes from its line: dropped, forgotten and listed again, it is created anew
    at once, its generation and epoch going on (intents and fencing never go back)."""
    await make_ready(registry, make_proxy("s1", clock, external=True))
    await redis_client.hset("pf:proxy:s1", "epoch", 1234)
    await _forget(registry, "s1")
    gone = await registry.get("s1")
    assert gone is not None

    made = await registry.create_many([make_proxy("s1", clock, external=True, password="new")])
    assert made.ids == ["s1"]
    back = await registry.get("s1")
    assert back is not None
    assert (back.phase, back.gen, back.epoch, back.password) == (
        Phase.PENDING, gone.gen + 1, 1234, "new"
    )  # fmt: skip
    assert await redis_client.ttl("pf:proxy:s1") == -1  # the deleted record's expiry went
    assert await redis_client.zscore("pf:tombstones", "s1") is None
    assert (await registry.count_by_phase("local")).get(Phase.DELETED, 0) == 0
    # A create intent JetStream cannot take for the first one's duplicate.
    assert await _create_intent_ids(redis_client) == ["s1:create", f"s1:create:{gone.gen + 1}"]


async def test_a_managed_proxy_never_takes_over_a_deleted_record(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await _forget(registry, "p1")
    assert (await registry.create_many([make_proxy("p1", clock)])).ids == []
    assert (await registry.create_many([make_proxy("p1", clock, external=True)])).ids == []
    gone = await registry.get("p1")
    assert gone is not None
    assert gone.phase is Phase.DELETED
