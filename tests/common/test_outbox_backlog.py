"""The outbox's high-water mark: past it, grants and creates are refused (503
`events_backlog`) while what ends or keeps a lease still goes through, and grants resume as
soon as the relays have taken the backlog below the mark."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.creates import Idempotency
from proxyfleet.common.store.lease_terms import GrantKey, LeasePolicy
from proxyfleet.common.store.replies import BACKLOG_RETRY_AFTER
from proxyfleet.common.wire.models import LeaseOutcome

MARK = 12


@pytest.fixture
def bounded(redis_client: aioredis.Redis, clock: ManualClock) -> tuple[ProxyRegistry, LeaseStore]:
    registry = ProxyRegistry(redis_client, clock, outbox_high_water=MARK)
    policy = LeasePolicy(cooldown=0, outbox_high_water=MARK)
    return registry, LeaseStore(redis_client, clock, policy)


async def _fill_to_the_mark(redis_client: aioredis.Redis, registry: ProxyRegistry) -> None:
    while (length := await registry.outbox.length()) < MARK:
        await redis_client.xadd(registry.outbox.key, {"s": "x", "i": f"pad-{length}", "d": "{}"})


async def test_past_the_mark_grants_and_creates_wait_and_what_ends_a_lease_goes_through(
    bounded: tuple[ProxyRegistry, LeaseStore], redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    registry, leases = bounded
    for pid in ("p1", "p2"):
        await make_ready(registry, make_proxy(pid, clock))
    key = GrantKey("k1", "fp1")
    held = (await leases.grant_with_proxy(GrantRequest(ttl=60, client="c"), key=key))[0]
    await _fill_to_the_mark(redis_client, registry)

    with pytest.raises(Unavailable) as refused:
        await leases.grant(GrantRequest(ttl=60, client="c"))
    assert (refused.value.code, refused.value.retry_after) == (
        "events_backlog",
        BACKLOG_RETRY_AFTER,
    )
    assert f"at or over the high-water mark of {MARK}" in str(refused.value)
    with pytest.raises(Unavailable, match="events wait for NATS"):
        await registry.create(make_proxy("p3", clock))
    assert await registry.get("p3") is None  # nothing stored
    with pytest.raises(Unavailable):  # a named proxy too
        await leases.grant(GrantRequest(ttl=60, proxy_id="p2", client="c"))

    # The grant retried with its key still gets its lease; the lease lives on and ends.
    again = (await leases.grant_with_proxy(GrantRequest(ttl=60, client="c"), key=key))[0]
    assert again.id == held.id
    await leases.renew(held.id, held.epoch, 60, owner="c")
    await leases.report(held.id, held.epoch, LeaseOutcome.OK, "a.example", owner="c")
    await leases.release(held.id, held.epoch, owner="c")
    assert await registry.outbox.length() == MARK + 3  # their events are kept, past the mark

    # The relays take the backlog below the mark: grants and creates go on.
    await redis_client.xtrim(registry.outbox.key, maxlen=MARK - 2, approximate=False)
    assert (await leases.grant(GrantRequest(ttl=60, client="c"))).proxy_id in {"p1", "p2"}
    assert await registry.create(make_proxy("p3", clock))


async def test_a_replayed_create_is_answered_past_the_mark(
    bounded: tuple[ProxyRegistry, LeaseStore], redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    registry, _ = bounded
    idem = Idempotency("key-1", "fp-1", 600)
    made = await registry.create_many([make_proxy("p1", clock)], idempotency=idem)
    await _fill_to_the_mark(redis_client, registry)
    replay = await registry.create_many([make_proxy("p1", clock)], idempotency=idem)
    assert (replay.ids, replay.replayed) == (made.ids, True)


async def test_no_mark_refuses_nothing(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    for i in range(50):
        await redis_client.xadd(registry.outbox.key, {"s": "x", "i": f"pad-{i}", "d": "{}"})
    assert (await leases.grant(GrantRequest(ttl=60))).proxy_id == "p1"
    backlog = await registry.outbox.backlog(clock.now())  # what the relay's gauges show
    assert backlog.length == await registry.outbox.length() > 50
    assert backlog.used_memory > 0
