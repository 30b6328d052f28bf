"""The controller on a real Redis (the provisioner and health played by the test): members
created with their pool, replaced when they fail, recycled and deleted; one replica per
pool, a stale one writes nothing; the config file's pools applied and pruned."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, outbox_events

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.domain.pool_spec import POOL_LABEL, AutoQuarantine, Owner, PoolSpec
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.store import (
    FencedOut,
    GrantRequest,
    LeaseStore,
    Locks,
    PoolStore,
    ProxyRegistry,
)
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.events import EventType
from proxyfleet.common.wire.models import LeaseOutcome, Phase, Withheld
from proxyfleet.pools.config_pools import ConfigPools
from proxyfleet.pools.controller import PoolController
from proxyfleet.pools.settings import PoolsSettings

CONFIG = parse_providers_config(
    """
providers:
  - name: local
    type: local
    zones: [local-a, local-b]
    max_proxies: 12
    local: {}
pools:
  from-file:
    provider: local
    size: 1
""",
    "providers.yaml",
)


@pytest.fixture
def pools(redis_client: aioredis.Redis, clock: ManualClock) -> PoolStore:
    return PoolStore(redis_client, clock)


@pytest.fixture(autouse=True)
async def listed(registry: ProxyRegistry) -> None:
    """What the local provisioner's adopter does at its first pass on a new store."""
    marker = await registry.installation.mark("inst")
    await registry.installation.mark_listed("local", marker)


def controller(
    redis_client: aioredis.Redis, clock: ManualClock, replica: str = "a", **kw: object
) -> PoolController:
    return PoolController(
        pools=PoolStore(redis_client, clock),
        registry=ProxyRegistry(redis_client, clock),
        locks=Locks(redis_client),
        providers=CONFIG,
        settings=PoolsSettings(interval=1.0, lock_ttl=30),
        clock=clock,
        replica=replica,
        **kw,  # type: ignore[arg-type]
    )


async def bring_up(registry: ProxyRegistry, ids: list[str]) -> None:
    """What the provisioner and health do for a new member."""
    for pid in ids:
        await registry.transition(pid, Phase.PROVISIONING)
        await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=3128)
        await registry.transition(pid, Phase.READY)


async def test_members_are_created_replaced_and_counted(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore, registry: ProxyRegistry
) -> None:
    await pools.apply("eu", PoolSpec(provider="local", size=3, labels={"team": "qa"}), Owner.API)
    ctl = controller(redis_client, clock)
    plans = await ctl.pass_once()
    assert len(plans["eu"].creates) == 3
    ids = await pools.members("eu")
    made = [p for p in await registry.get_many(ids) if p is not None]
    assert {p.zone for p in made} == {"local-a", "local-b"}
    assert all(p.pool == "eu" and p.labels == {"team": "qa", POOL_LABEL: "eu"} for p in made)
    await ctl.pass_once()  # still starting: nothing more
    assert len(await pools.members("eu")) == 3
    await bring_up(registry, ids)
    await ctl.pass_once()
    record = await pools.get("eu") or pytest.fail("no pool")
    status = record.status or pytest.fail("no status")
    assert (status.ready, status.free, status.controller) == (3, 3, "a")
    await registry.transition(ids[0], Phase.FAILED, reason="pod evicted")
    plans = await ctl.pass_once()
    assert len(plans["eu"].creates) == 1
    assert plans["eu"].create_reason == "replace"


async def test_a_recycle_keeps_ready_members_at_size(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore, registry: ProxyRegistry
) -> None:
    spec = PoolSpec(provider="local", size=2, max_age=3600, max_surge=1)
    await pools.apply("eu", spec, Owner.API)
    ctl = controller(redis_client, clock)
    await ctl.pass_once()
    first = await pools.members("eu")
    await bring_up(registry, first)
    clock.advance(4000)
    leases = LeaseStore(redis_client, clock, LeasePolicy(cooldown=0))
    held = await leases.grant(GrantRequest(ttl=600, pool="eu"))
    for _ in range(12):  # passes, each followed by the provisioner's and health's part
        await ctl.pass_once()
        new = [m for m in await pools.members("eu") if m not in first]
        starting = [p.id for p in await registry.get_many(new) if p and p.phase is Phase.PENDING]
        await bring_up(registry, starting)
        status = (await pools.get("eu") or pytest.fail("gone")).status or pytest.fail("none")
        assert status.ready >= 2
        proxy = await registry.get(held.proxy_id) or pytest.fail("gone")
        if proxy.withheld is Withheld.DRAINING and proxy.lease_id == held.id:
            await leases.release(held.id, held.epoch)  # the holder's lease ends on its own
        clock.advance(1)
    members = await registry.get_many(await pools.members("eu"))
    assert not set(first) & {p.id for p in members if p and p.phase is not Phase.DELETING}
    events = {e.type for e in await outbox_events(redis_client)}
    assert {EventType.POOL_RECYCLING, EventType.PROXY_DRAINED} <= events


async def test_a_member_released_from_quarantine_stays_in_rotation(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore, registry: ProxyRegistry
) -> None:
    rule = AutoQuarantine(blocked_targets=2, within=600)
    await pools.apply("eu", PoolSpec(provider="local", size=1, quarantine=rule), Owner.API)
    ctl = controller(redis_client, clock)
    await ctl.pass_once()
    (pid,) = await pools.members("eu")
    await bring_up(registry, [pid])
    leases = LeaseStore(redis_client, clock, LeasePolicy(cooldown=0))
    held = await leases.grant(GrantRequest(ttl=600, pool="eu"))
    for target in ("a.example", "b.example"):
        await leases.report(held.id, held.epoch, LeaseOutcome.BLOCKED, target=target)
    await leases.release(held.id, held.epoch)
    await ctl.pass_once()
    assert (await registry.get(pid) or pytest.fail("gone")).withheld is Withheld.QUARANTINED
    assert await pools.withhold(pid, Withheld.NO, actor="ops")  # an admin found it fine
    clock.advance(1)
    await ctl.pass_once()  # its reports from before the release no longer count
    assert (await registry.get(pid) or pytest.fail("gone")).withheld is Withheld.NO


async def test_after_a_store_reset_creates_wait_for_re_adoption(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore, registry: ProxyRegistry
) -> None:
    ctl = controller(redis_client, clock)
    await redis_client.flushdb()  # a Redis reset without persistence
    await pools.apply("eu", PoolSpec(provider="local", size=2), Owner.API)
    held = (await ctl.pass_once())["eu"]
    assert (held.creates, await pools.members("eu")) == ([], [])  # nothing listed yet: wait
    capacity = next(c for c in held.status.conditions if c.type == "CapacityExceeded")
    assert "local: its resources not listed since the store began" in capacity.message
    marker = await registry.installation.mark("inst")  # a provisioner found the store empty
    survivor = make_proxy("m1", clock, phase=Phase.BOOTING, pool="eu", labels={POOL_LABEL: "eu"})
    assert await registry.adopt(survivor)  # ...re-adopts the member that outlived it
    assert (await ctl.pass_once())["eu"].creates == []  # still not listed: still waits
    assert await registry.installation.mark_listed("local", marker)  # ...and says so
    await ctl.pass_once()
    assert len(await pools.members("eu")) == 2  # one survivor, one new
    await redis_client.delete("pf:installation")  # a reset between a listing and its mark
    assert not await registry.installation.mark_listed("local", marker)


async def test_one_replica_per_pool_and_a_stale_one_creates_nothing(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore
) -> None:
    await pools.apply("eu", PoolSpec(provider="local", size=2), Owner.API)
    a, b = controller(redis_client, clock, "a"), controller(redis_client, clock, "b")
    assert set(await a.pass_once()) == {"eu"}
    assert await b.pass_once() == {}
    await Locks(redis_client).release(["pool:eu"], "a")  # a paused past its lock ttl
    assert set(await b.pass_once()) == {"eu"}
    await pools.apply("eu", PoolSpec(provider="local", size=4), Owner.API)
    with pytest.raises(FencedOut):  # a wakes up believing it still holds the pool
        await a.reconcile("eu")
    assert len(await pools.members("eu")) == 2  # its creates were fenced out
    await b.pass_once()
    assert len(await pools.members("eu")) == 4


async def test_a_deleted_pool_drains_then_goes(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore, registry: ProxyRegistry
) -> None:
    await pools.apply("eu", PoolSpec(provider="local", size=2), Owner.API)
    ctl = controller(redis_client, clock)
    await ctl.pass_once()
    ids = await pools.members("eu")
    await bring_up(registry, ids)
    await pools.delete("eu", Owner.API)
    await ctl.pass_once()
    assert {p.phase for p in await registry.get_many(ids) if p} == {Phase.DELETING}
    for pid in ids:  # the provisioner's part
        await registry.transition(pid, Phase.DELETED)
    await ctl.pass_once()
    assert await pools.get("eu") is None
    assert (await outbox_events(redis_client))[-1].type is EventType.POOL_DELETED


async def test_the_config_files_pools_are_applied_and_pruned(
    redis_client: aioredis.Redis, clock: ManualClock, pools: PoolStore
) -> None:
    config = ConfigPools(pools, dict(CONFIG.pools), "providers.yaml")
    await pools.apply("mine", PoolSpec(provider="local", size=1), Owner.API)
    ctl = controller(redis_client, clock, config_pools=config)
    await ctl.pass_once()
    record = await pools.get("from-file") or pytest.fail("not applied")
    assert (record.owner, record.owner_ref) == (Owner.CONFIG, "providers.yaml")
    await redis_client.flushdb()  # a Redis reset without persistence
    await ctl.pass_once()
    assert await pools.get("from-file") is not None
    emptied = ConfigPools(pools, {}, "providers.yaml")
    await emptied.apply()
    assert (await pools.get("from-file") or pytest.fail("gone at once")).deleting
