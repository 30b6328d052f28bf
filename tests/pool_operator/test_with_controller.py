"""A ProxyPool with the real pool controller (proxyfleet.pools, in the test's process, one
pass at a time; the provisioner's and health's part played by the test): applied → the
controller creates the members; their status on the resource; scaled → one more member;
deleted → the controller drains and deletes them, removes the pool, and only then does
the operator let the resource go."""

from __future__ import annotations

import redis.asyncio as aioredis
from tests.pool_operator.harness import PROVIDERS_YAML, OperatorFactory, Pools, eventually

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.store import Locks, PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.pools.controller import PoolController
from proxyfleet.pools.settings import PoolsSettings


async def bring_up(registry: ProxyRegistry, ids: list[str], clock: Clock) -> None:
    """What the provisioner and health do for a new member."""
    for pid in ids:
        await registry.transition(pid, Phase.PROVISIONING)
        await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=3128)
        await registry.transition(pid, Phase.READY, last_ok_at=clock.now())


async def test_the_controller_fills_reports_and_empties_a_proxypools_pool(
    operators: OperatorFactory,
    pools: Pools,
    store: PoolStore,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    clock: Clock,
) -> None:
    controller = PoolController(
        pools=store,
        registry=registry,
        locks=Locks(redis_client),
        providers=parse_providers_config(PROVIDERS_YAML, "providers.yaml"),
        settings=PoolsSettings(interval=1.0, lock_ttl=30),
        clock=clock,
        replica="test",
    )
    # The provisioner's part at its start: its resources listed under this store's marker
    # (the controller creates on a provider only then).
    assert await registry.installation.mark_listed("local", await registry.installation.mark("t"))
    op = operators.start()
    await op.wait_ready()
    made = pools.apply("eu", {"provider": "local", "size": 3, "labels": {"team": "qa"}})
    await eventually("declared", lambda: store.get("eu"))
    plans = await controller.pass_once()
    assert len(plans["eu"].creates) == 3
    members = await store.members("eu")
    for proxy in await registry.get_many(members):
        assert proxy is not None
        assert (proxy.pool, proxy.labels) == ("eu", {"team": "qa", POOL_LABEL: "eu"})
    await bring_up(registry, members, clock)
    await controller.pass_once()

    async def full(ready: int) -> bool:
        s = pools.status("eu")
        condition = pools.condition("eu") or {}
        return s.get("ready") == ready and condition.get("status") == "True"

    await eventually("3 ready on the resource", lambda: full(3))
    status = pools.status("eu")
    assert status["observedGeneration"] == made["metadata"]["generation"]
    assert (status["desired"], status["free"]) == (3, 3)

    pools.scale("eu", 4)

    async def resized() -> bool:
        found = await store.get("eu")
        return found is not None and found.spec.size == 4

    await eventually("size 4 in Redis", resized)
    plans = await controller.pass_once()
    assert len(plans["eu"].creates) == 1
    await bring_up(registry, [m for m in await store.members("eu") if m not in members], clock)
    await controller.pass_once()
    await eventually("4 ready on the resource", lambda: full(4))
    assert pools.get_scale("eu")["status"]["replicas"] == 4

    pools.delete("eu")

    async def deleting() -> bool:
        found = await store.get("eu")
        return found is not None and found.deleting

    await eventually("the pool being deleted", deleting)
    await controller.pass_once()
    members = await store.members("eu")
    assert {p.phase for p in await registry.get_many(members) if p} == {Phase.DELETING}
    assert pools.get("eu") is not None  # its members hold it
    for pid in members:  # the provisioner's part
        await registry.transition(pid, Phase.DELETED)
    await controller.pass_once()
    assert await store.get("eu") is None

    async def gone() -> bool:
        return pools.get("eu") is None

    await eventually("the resource gone", gone)
    assert op.stop() == 0
