"""Pools in the store: members kept by the proxy scripts, grants by pool, withheld proxies
(drained, quarantined) never granted, declarations owned by one source, fenced writes."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready, outbox_events

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, NotFound, Unavailable
from proxyfleet.common.domain.pool_spec import POOL_LABEL, Autoscale, Owner, PoolSpec
from proxyfleet.common.store import (
    Fence,
    FencedOut,
    GrantRequest,
    LeaseStore,
    Locks,
    PoolOwned,
    PoolStore,
    ProxyRegistry,
)
from proxyfleet.common.store import pools as store_pools
from proxyfleet.common.wire.events import EventType
from proxyfleet.common.wire.models import Lease, LeaseOutcome, Phase, Withheld


@pytest.fixture
def pools(redis_client: aioredis.Redis, clock: ManualClock) -> PoolStore:
    return PoolStore(redis_client, clock)


async def test_members_are_indexed_from_create_to_delete(
    registry: ProxyRegistry, pools: PoolStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("m1", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    clock.advance(1)
    await make_ready(registry, make_proxy("m2", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    await make_ready(registry, make_proxy("lone", clock))
    assert await pools.members("eu") == ["m1", "m2"]
    await registry.transition("m1", Phase.DELETING)
    assert await pools.members("eu") == ["m1", "m2"]  # deleting still holds its resource
    await registry.transition("m1", Phase.DELETED)
    assert await pools.members("eu") == ["m2"]
    rows = await pools.member_rows(["m2", "gone"])
    assert rows[0][:3] == ["local", "zone-a", "ready"]
    assert rows[1] == [None] * len(rows[1])


async def test_rows_and_blocked_targets_are_read_in_chunks_in_order(
    registry: ProxyRegistry,
    leases: LeaseStore,
    pools: PoolStore,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_pools, "ROWS_PER_CALL", 2)
    for i in range(4):
        await make_ready(registry, make_proxy(f"m{i}", clock, zone=f"z{i}", pool="eu"))
    assert await pools.member_rows([]) == []
    rows = await pools.member_rows(["m3", "m0", "gone", "m2", "m1"])
    assert [r[1] for r in rows] == ["z3", "z0", None, "z2", "z1"]
    assert all(len(r) == len(store_pools.MEMBER_FIELDS) for r in rows)
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="m2"))
    await leases.report(lease.id, lease.epoch, LeaseOutcome.BLOCKED, target="a.example")
    blocked = await pools.blocked_targets(["m3", "m0", "gone", "m2", "m1"], clock.now())
    assert blocked == [[], [], [], ["a.example"], []]
    assert await pools.blocked_targets([], 0) == []


async def test_a_grant_by_pool_takes_only_members_and_counts_refusals(
    registry: ProxyRegistry, leases: LeaseStore, pools: PoolStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("lone", clock))
    await make_ready(registry, make_proxy("m1", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    await pools.apply("eu", PoolSpec(provider="local", size=1), Owner.API)
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60, pool="nope"))
    assert await pools.take_refused("nope") == 0  # not a pool: nothing counted
    lease = await leases.grant(GrantRequest(ttl=60, pool="eu"))
    assert lease.proxy_id == "m1"
    for _ in range(2):
        with pytest.raises(Unavailable):
            await leases.grant(GrantRequest(ttl=60, pool="eu"))
    assert await pools.take_refused("eu") == 2
    assert await pools.take_refused("eu") == 0
    assert (await leases.grant(GrantRequest(ttl=60))).proxy_id == "lone"
    with pytest.raises(Conflict, match="not a member of pool eu"):
        await leases.grant(GrantRequest(ttl=60, proxy_id="lone", pool="eu"))


async def test_a_drained_member_keeps_its_lease_is_never_granted_and_is_revoked_as_recycled(
    registry: ProxyRegistry,
    leases: LeaseStore,
    pools: PoolStore,
    clock: ManualClock,
    redis_client: aioredis.Redis,
) -> None:
    await make_ready(registry, make_proxy("m1", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    await make_ready(registry, make_proxy("m2", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    held = await leases.grant(GrantRequest(ttl=60, proxy_id="m1"))
    assert await pools.withhold("m1", Withheld.DRAINING, "recycled")
    assert await pools.withhold("m2", Withheld.DRAINING, "recycled")
    assert not await pools.withhold("m2", Withheld.DRAINING, "again")  # already draining
    await leases.renew(held.id, held.epoch, 60)  # its lease runs on
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60))
    with pytest.raises(Conflict, match="draining") as by_id:
        await leases.grant(GrantRequest(ttl=60, proxy_id="m2"))
    assert by_id.value.code == "proxy_draining"
    await leases.release(held.id, held.epoch)
    clock.advance(100)  # past the cooldown: still not grantable
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60, pool="eu"))
    again = (await registry.get("m1")) or pytest.fail("m1 gone")
    assert (again.withheld, again.withheld_reason) == (Withheld.DRAINING, "recycled")
    # The health of a drained member may come and go: back to ready, still withheld.
    await registry.transition("m2", Phase.UNHEALTHY)
    await registry.transition("m2", Phase.READY)
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60))
    # Deleted past its drain timeout, a lease is revoked with the drain's reason.
    await registry.update("m2", withheld_reason="recycled")
    late = await _lease_on_withheld(registry, leases, "m2")
    await registry.transition("m2", Phase.DELETING)
    state = await leases.get(late.id) or pytest.fail("lease gone")
    assert (state[1], state[0].reason) == ("revoked", "recycled")
    drained = [e for e in await outbox_events(redis_client) if e.type is EventType.PROXY_DRAINED]
    assert [(e.proxy_id, e.pool, e.data.reason) for e in drained] == [
        ("m1", "eu", "recycled"), ("m2", "eu", "recycled"),
    ]  # fmt: skip


async def _lease_on_withheld(registry: ProxyRegistry, leases: LeaseStore, pid: str) -> Lease:
    """A lease on a withheld proxy, as one granted before its drain would be."""
    await registry.update(pid, withheld="")
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id=pid))
    await registry.update(pid, withheld="draining")
    return lease


async def test_quarantine_and_release_by_an_admin(
    registry: ProxyRegistry,
    leases: LeaseStore,
    pools: PoolStore,
    clock: ManualClock,
    redis_client: aioredis.Redis,
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    assert await pools.withhold("p1", Withheld.QUARANTINED, "tests", actor="ops")
    assert not await pools.withhold("p1", Withheld.DRAINING, "recycled")  # stays quarantined
    with pytest.raises(Conflict, match="quarantined"):
        await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    assert not await pools.withhold("p1", Withheld.QUARANTINED, "again")
    assert await pools.withhold("p1", Withheld.NO, actor="ops")
    assert (await leases.grant(GrantRequest(ttl=60))).proxy_id == "p1"
    assert not await pools.withhold("p1", Withheld.NO)  # not quarantined: nothing to do
    with pytest.raises(NotFound):
        await pools.withhold("ghost", Withheld.QUARANTINED)
    kinds = [(e.type, e.data.by) for e in await outbox_events(redis_client)]
    assert (EventType.PROXY_QUARANTINED, "ops") in kinds
    assert (EventType.PROXY_UNQUARANTINED, "ops") in kinds


async def test_blocked_reports_are_kept_per_target(
    registry: ProxyRegistry, leases: LeaseStore, pools: PoolStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    start = clock.now()
    for target in ("a.example", "b.example", "a.example"):
        lease = await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
        await leases.report(lease.id, lease.epoch, LeaseOutcome.BLOCKED, target=target)
        await leases.release(lease.id, lease.epoch)
        clock.advance(40)  # past the cooldown
    assert sorted((await pools.blocked_targets(["p1"], start))[0]) == ["a.example", "b.example"]
    assert await pools.blocked_targets(["p1"], clock.now()) == [[]]


async def test_a_declaration_belongs_to_its_source(
    pools: PoolStore, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    spec = PoolSpec(provider="local", size=3)
    first = await pools.apply("eu", spec, Owner.API)
    assert (first.gen, first.changed) == (1, True)
    assert (await pools.apply("eu", spec, Owner.API)).changed is False
    with pytest.raises(PoolOwned, match="declared by the API") as owned:
        await pools.apply("eu", spec, Owner.CONFIG, "providers.yaml")
    assert owned.value.code == "pool_owned"
    bigger = await pools.apply("eu", PoolSpec(provider="local", size=5), Owner.API)
    record = await pools.get("eu") or pytest.fail("no pool")
    assert (bigger.gen, record.desired, record.owner) == (2, 5, Owner.API)
    with pytest.raises(Conflict, match="generation 2, not 1"):
        await pools.apply("eu", spec, Owner.API, expected_gen=1)
    events = [(e.type, e.pool, e.data.size) for e in await outbox_events(redis_client)]
    assert events == [
        (EventType.POOL_APPLIED, "eu", None), (EventType.POOL_SCALED, "eu", 3),
        (EventType.POOL_APPLIED, "eu", None), (EventType.POOL_SCALED, "eu", 5),
    ]  # fmt: skip
    assert [r.name for r in await pools.all()] == ["eu"]


async def test_autoscale_keeps_its_size_across_spec_changes(pools: PoolStore) -> None:
    scaled = PoolSpec(provider="local", autoscale=Autoscale(min=2, max=10))
    await pools.apply("eu", scaled, Owner.API)
    record = await pools.get("eu") or pytest.fail("no pool")
    fence = Fence("", "")
    assert await pools.scale("eu", 7, "3 grants refused", record.gen, fence)
    narrower = PoolSpec(provider="local", autoscale=Autoscale(min=2, max=5))
    await pools.apply("eu", narrower, Owner.API)
    assert (await pools.get("eu") or pytest.fail("no pool")).desired == 5  # clamped, not reset
    assert not await pools.scale("eu", 4, "stale", record.gen, fence)  # spec changed since


async def test_deleting_keeps_the_members_until_they_are_gone(
    registry: ProxyRegistry, pools: PoolStore, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    await pools.apply("eu", PoolSpec(provider="local", size=1), Owner.API)
    await make_ready(registry, make_proxy("m1", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    with pytest.raises(PoolOwned):
        await pools.delete("eu", Owner.KUBERNETES)
    assert await pools.delete("eu", Owner.API)
    assert not await pools.delete("eu", Owner.API)  # being deleted already
    with pytest.raises(Conflict, match="being deleted"):
        await pools.apply("eu", PoolSpec(provider="local", size=2), Owner.API)
    locks = Locks(redis_client)
    await locks.acquire(["pool:eu"], "me", 30)
    fence = Fence("pool:eu", "me")
    assert not await pools.remove_if_empty("eu", fence)  # m1 remains
    await registry.transition("m1", Phase.DELETING)
    await registry.transition("m1", Phase.DELETED)
    with pytest.raises(FencedOut):
        await pools.remove_if_empty("eu", Fence("pool:eu", "another"))
    assert await pools.remove_if_empty("eu", fence)
    assert (await pools.get("eu"), await pools.names()) == (None, [])
    assert (await outbox_events(redis_client))[-1].type is EventType.POOL_DELETED


async def test_deleting_with_keep_proxies_leaves_them_to_the_plain_fleet(
    registry: ProxyRegistry, leases: LeaseStore, pools: PoolStore, clock: ManualClock
) -> None:
    await pools.apply("eu", PoolSpec(provider="local", size=2), Owner.API)
    labels = {POOL_LABEL: "eu", "team": "qa"}
    await make_ready(registry, make_proxy("m1", clock, pool="eu", labels=labels))
    await make_ready(registry, make_proxy("m2", clock, pool="eu", labels=labels))
    await pools.withhold("m2", Withheld.DRAINING, "recycled")
    assert await pools.delete("eu", Owner.API, keep_proxies=True)
    assert await pools.get("eu") is None
    for pid in ("m1", "m2"):
        proxy = await registry.get(pid) or pytest.fail(pid)
        assert (proxy.pool, proxy.labels, proxy.withheld) == ("", {"team": "qa"}, Withheld.NO)
    granted = {(await leases.grant(GrantRequest(ttl=60))).proxy_id for _ in range(2)}
    assert granted == {"m1", "m2"}


async def test_a_fenced_create_needs_the_lock(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    await Locks(redis_client).acquire(["pool:eu"], "leader", 30)
    proxy = make_proxy("m1", clock, pool="eu", labels={POOL_LABEL: "eu"})
    with pytest.raises(FencedOut):
        await registry.create_many([proxy], fence=Fence("pool:eu", "follower"))
    assert await registry.get("m1") is None
    made = await registry.create_many([proxy], fence=Fence("pool:eu", "leader"))
    assert made.ids == ["m1"]
    pending = (await outbox_events(redis_client))[-1]
    assert (pending.type, pending.pool) == (EventType.PROXY_PENDING, "eu")
