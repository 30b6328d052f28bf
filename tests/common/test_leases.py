from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock, SystemClock
from proxyfleet.common.core.errors import Conflict, NotFound, Unavailable
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry, connect_redis
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import LeaseOutcome, Phase


async def test_grant_picks_least_recently_used_and_fences(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    for i in range(2):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    a = await leases.grant(GrantRequest(ttl=60, holder="w1"))
    b = await leases.grant(GrantRequest(ttl=60, holder="w2"))
    assert {a.proxy_id, b.proxy_id} == {"p0", "p1"}
    assert a.epoch == b.epoch == int(clock.now() * 1000)  # a hybrid-logical-clock epoch
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60))
    await leases.release(a.id, a.epoch)
    clock.advance(31)
    again = await leases.grant(GrantRequest(ttl=60))
    assert again.proxy_id == a.proxy_id
    assert again.epoch > a.epoch  # fencing token grows per proxy


async def test_specific_proxy_conflicts_carry_retry_after(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    with pytest.raises(Conflict) as leased:
        await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    assert leased.value.retry_after == pytest.approx(60)
    await leases.release(lease.id, lease.epoch)
    clock.advance(10)
    with pytest.raises(Conflict, match="cooling down") as cooling:
        await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    assert cooling.value.retry_after == pytest.approx(20)
    with pytest.raises(Unavailable) as none:
        await leases.grant(GrantRequest(ttl=60))
    assert none.value.retry_after == pytest.approx(20)  # when the cooldown ends
    with pytest.raises(NotFound):
        await leases.grant(GrantRequest(ttl=60, proxy_id="ghost"))


async def test_none_free_retry_after_is_the_soonest_end(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    """503's retry_after: the soonest lease end or cooldown end among the proxies the
    selector takes, not a constant."""
    await make_ready(registry, make_proxy("p1", clock, zone="z1"))
    await make_ready(registry, make_proxy("p2", clock, zone="z2"))
    await leases.grant(GrantRequest(ttl=117, zone="z1"))
    soon = await leases.grant(GrantRequest(ttl=500, zone="z2"))
    with pytest.raises(Unavailable) as all_leased:
        await leases.grant(GrantRequest(ttl=60))
    assert all_leased.value.retry_after == pytest.approx(117)
    with pytest.raises(Unavailable) as in_z2:
        await leases.grant(GrantRequest(ttl=60, zone="z2"))
    assert in_z2.value.retry_after == pytest.approx(500)  # the z1 lease frees nothing here
    await leases.release(soon.id, soon.epoch)  # p2 cools down for 30 s
    clock.advance(22)
    with pytest.raises(Unavailable) as cooling:
        await leases.grant(GrantRequest(ttl=60))
    assert cooling.value.retry_after == pytest.approx(8)  # p2's cooldown ends first
    with pytest.raises(Unavailable) as z1:
        await leases.grant(GrantRequest(ttl=60, zone="z1"))
    assert z1.value.retry_after == pytest.approx(95)


async def test_none_free_retry_after_is_at_most_the_max_ttl(
    redis_client: aioredis.Redis, registry: ProxyRegistry, clock: ManualClock
) -> None:
    long = LeaseStore(redis_client, clock, LeasePolicy(cooldown=10_000, max_ttl=600))
    await make_ready(registry, make_proxy("p1", clock))
    lease = await long.grant(GrantRequest(ttl=600))
    await long.release(lease.id, lease.epoch)
    with pytest.raises(Unavailable) as none:
        await long.grant(GrantRequest(ttl=60))
    assert none.value.retry_after == pytest.approx(600)


async def test_stale_epoch_and_ended_leases_conflict(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60))
    with pytest.raises(Conflict, match="stale epoch"):
        await leases.release(lease.id, lease.epoch + 1)
    with pytest.raises(Conflict, match="stale epoch"):
        await leases.report(lease.id, lease.epoch - 1, LeaseOutcome.OK)
    await leases.release(lease.id, lease.epoch)
    with pytest.raises(Conflict, match="released"):
        await leases.release(lease.id, lease.epoch)
    with pytest.raises(NotFound):
        await leases.renew("l-ghost", 1, 60)
    got = await leases.get(lease.id)
    assert got is not None
    assert got[1] == "released"


async def test_renew_caps_at_max_ttl_and_expiry_releases(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=10_000))
    assert lease.expires_at == clock.now() + 600
    clock.advance(5)
    renewed = await leases.renew(lease.id, lease.epoch, 20)
    assert (renewed.proxy_id, renewed.expires_at) == ("p1", clock.now() + 20)
    clock.advance(21)
    with pytest.raises(Conflict, match="expired"):
        await leases.renew(lease.id, lease.epoch, 20)
    released = await leases.expire_due()
    assert [(r.lease_id, r.proxy_id) for r in released] == [(lease.id, "p1")]
    got = await leases.get(lease.id)
    assert got is not None
    assert got[1] == "expired"
    clock.advance(30)
    assert (await leases.grant(GrantRequest(ttl=5))).proxy_id == "p1"


async def test_blocked_report_bans_for_that_target_only(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60, target="shop.example"))
    assert await leases.report(lease.id, lease.epoch, LeaseOutcome.BLOCKED) == (
        "p1",
        "shop.example",
    )
    await leases.release(lease.id, lease.epoch)
    clock.advance(31)
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60, target="shop.example"))
    other = await leases.grant(GrantRequest(ttl=60, target="news.example"))
    assert other.proxy_id == "p1"
    await leases.release(other.id, other.epoch)
    clock.advance(100)  # ban (100 s) over
    assert (await leases.grant(GrantRequest(ttl=60, target="shop.example"))).proxy_id == "p1"


async def test_selectors_by_provider_zone_and_labels(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("a", clock, zone="zone-a", labels={"tier": "gold"}))
    await make_ready(registry, make_proxy("b", clock, zone="zone-b", labels={"tier": "free"}))
    await make_ready(registry, make_proxy("c", clock, provider="gcp", zone="zone-b"))
    assert (await leases.grant(GrantRequest(ttl=5, labels={"tier": "free"}))).proxy_id == "b"
    assert (await leases.grant(GrantRequest(ttl=5, provider="gcp"))).proxy_id == "c"
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=5, provider="local", zone="zone-b"))
    assert (await leases.grant(GrantRequest(ttl=5, zone="zone-a"))).proxy_id == "a"


async def test_unhealthy_proxy_is_not_granted_and_forced_delete_revokes(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await make_ready(registry, make_proxy("p2", clock))
    await registry.transition("p2", Phase.UNHEALTHY)
    lease = await leases.grant(GrantRequest(ttl=60))
    assert lease.proxy_id == "p1"
    res = await registry.transition("p1", Phase.DELETING)
    assert res.ended_lease_id == lease.id
    got = await leases.get(lease.id)
    assert got is not None
    assert got[1] == "revoked"
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60))


async def test_failed_report_schedules_a_reprobe(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    assert len(await registry.claim_probes(interval=100, limit=10)) == 1
    lease = await leases.grant(GrantRequest(ttl=60))
    await leases.report(lease.id, lease.epoch, LeaseOutcome.FAILED)
    assert [p.id for p in await registry.claim_probes(interval=100, limit=10)] == ["p1"]


async def test_concurrent_grants_from_many_clients_never_double_grant(redis_url: str) -> None:
    """Eight independent connection pools race 400 grants/releases over 4 proxies."""
    clock = SystemClock()
    clients: list[aioredis.Redis] = [connect_redis(redis_url) for _ in range(8)]
    await clients[0].flushdb()
    registry = ProxyRegistry(clients[0], clock)
    for i in range(4):
        await make_ready(registry, make_proxy(f"p{i}", ManualClock(clock.now())))
    stores = [LeaseStore(c, clock, LeasePolicy(cooldown=0, max_ttl=60)) for c in clients]
    holding: dict[str, str] = {}
    doubles: list[str] = []
    granted = 0

    async def worker(store: LeaseStore, n: int) -> None:
        nonlocal granted
        for _ in range(n):
            try:
                lease = await store.grant(GrantRequest(ttl=30))
            except Unavailable:
                await asyncio.sleep(0)
                continue
            granted += 1
            if lease.proxy_id in holding:
                doubles.append(lease.proxy_id)
            holding[lease.proxy_id] = lease.id
            await asyncio.sleep(0)
            del holding[lease.proxy_id]
            await store.release(lease.id, lease.epoch)

    await asyncio.gather(*(worker(s, 50) for s in stores))
    for c in clients:
        await c.aclose()
    assert doubles == []
    assert granted >= 4


async def test_unleased_only_transition_refuses_a_leased_proxy(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60))
    with pytest.raises(Conflict, match="leased"):
        await registry.transition("p1", Phase.DELETING, unleased_only=True)
    got = await leases.get(lease.id)
    assert got is not None
    assert got[1] == "active"
    await leases.release(lease.id, lease.epoch)
    await registry.transition("p1", Phase.DELETING, unleased_only=True)


async def test_a_lease_is_its_owners_in_every_script(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60, client="alice"))
    assert lease.client == "alice"
    got = await leases.get(lease.id)
    assert got is not None
    assert got[0].client == "alice"
    # another owner: "not found", checked before the state and the epoch (no hint either way)
    for epoch in (lease.epoch, lease.epoch + 1):
        with pytest.raises(NotFound):
            await leases.renew(lease.id, epoch, 30, owner="bob")
        with pytest.raises(NotFound):
            await leases.report(lease.id, epoch, LeaseOutcome.OK, owner="bob")
        with pytest.raises(NotFound):
            await leases.release(lease.id, epoch, owner="bob")
    await leases.renew(lease.id, lease.epoch, 30, owner="alice")
    await leases.report(lease.id, lease.epoch, LeaseOutcome.OK, owner="")  # an admin
    await leases.release(lease.id, lease.epoch, owner="alice")
    with pytest.raises(NotFound):
        await leases.release(lease.id, lease.epoch, owner="bob")  # ended, still hidden
    with pytest.raises(Conflict, match="released"):
        await leases.release(lease.id, lease.epoch, owner="alice")


async def test_epochs_continue_above_earlier_ones_after_a_store_reset(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    """No fencing token is reused: the epoch is at least the clock in ms, so a proxy
    registered again after FLUSHDB gets epochs above every one granted before."""
    await make_ready(registry, make_proxy("p0", clock))
    seen = []
    for _ in range(3):
        lease = await leases.grant(GrantRequest(ttl=60))
        seen.append(lease.epoch)
        await leases.release(lease.id, lease.epoch)
        clock.advance(31)
    await redis_client.flushdb()
    clock.advance(0.002)
    await make_ready(registry, make_proxy("p0", clock))

    after = await leases.grant(GrantRequest(ttl=60))

    assert seen == sorted(set(seen))
    assert after.epoch > max(seen)


async def _kept_for(redis: aioredis.Redis, lease_id: str) -> int:
    """Seconds Redis keeps an ended lease's record."""
    keys = [key async for key in redis.scan_iter(match=f"*:lease:{lease_id}")]
    assert len(keys) == 1
    return int(await redis.ttl(keys[0]))


async def test_ended_leases_are_kept_for_the_policys_time(
    redis_client: aioredis.Redis, registry: ProxyRegistry, clock: ManualClock
) -> None:
    """A day by default (a late release still learns how its lease ended); shorter where
    leases are many and short, as the gateway's one per connection."""
    day = LeaseStore(redis_client, clock, LeasePolicy(cooldown=0))
    brief = LeaseStore(redis_client, clock, LeasePolicy(cooldown=0, ended_ttl=600))
    await make_ready(registry, make_proxy("p1", clock))
    released = await day.grant(GrantRequest(ttl=60))
    await day.release(released.id, released.epoch)
    assert 86_000 < await _kept_for(redis_client, released.id) <= 86_400
    short = await brief.grant(GrantRequest(ttl=60))
    await brief.release(short.id, short.epoch)
    assert 500 < await _kept_for(redis_client, short.id) <= 600
    with pytest.raises(Conflict, match="released"):  # still says how it ended meanwhile
        await brief.release(short.id, short.epoch)
    expiring = await brief.grant(GrantRequest(ttl=5))
    clock.advance(6)
    assert [r.lease_id for r in await brief.expire_due()] == [expiring.id]
    assert 500 < await _kept_for(redis_client, expiring.id) <= 600
