from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.common.wire.models import Phase


async def test_create_is_idempotent_and_get_roundtrips(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    p = make_proxy("p1", clock, labels={"team": "qa"})
    assert await registry.create(p)
    assert not await registry.create(p)
    got = await registry.get("p1")
    assert got == p
    assert await registry.get("nope") is None


async def test_transitions_follow_lifecycle_and_bump_generation(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await registry.create(make_proxy("p1", clock))
    res = await registry.transition("p1", Phase.PROVISIONING, expected_gen=0)
    assert (res.gen, res.previous) == (1, Phase.PENDING)
    with pytest.raises(Conflict, match="generation"):
        await registry.transition("p1", Phase.BOOTING, expected_gen=0)
    with pytest.raises(Conflict, match="cannot move to ready"):
        await registry.transition("p1", Phase.READY)
    clock.advance(5)
    await registry.transition("p1", Phase.BOOTING, expected_gen=1, host="h", port=7)
    p = await registry.get("p1")
    assert p is not None
    assert (p.phase, p.gen, p.host, p.port, p.updated_at) == (Phase.BOOTING, 2, "h", 7, clock.now())
    with pytest.raises(NotFound):
        await registry.transition("ghost", Phase.DELETING)


async def test_update_without_transition_checks_generation(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await registry.create(make_proxy("p1", clock))
    assert await registry.update("p1", expected_gen=0, fail_streak=2) == 0
    with pytest.raises(Conflict):
        await registry.update("p1", expected_gen=3, fail_streak=1)
    p = await registry.get("p1")
    assert p is not None
    assert p.fail_streak == 2


async def test_a_field_a_proxy_lacks_is_refused_and_nothing_is_written(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    await registry.create(make_proxy("p1", clock))
    with pytest.raises(TypeError, match="fail_streek"):
        await registry.update("p1", fail_streek=2)
    with pytest.raises(TypeError, match="gen, phase"):
        await registry.update("p1", phase="ready", gen=7)
    with pytest.raises(TypeError, match="hostname"):
        await registry.transition("p1", Phase.PROVISIONING, hostname="h")
    with pytest.raises(TypeError, match="lastok"):
        await registry.update_many([("p1", None, {"fail_streak": 1}), ("p1", None, {"lastok": 1})])
    with pytest.raises(TypeError, match="streak"):
        await EgressStore(redis_client, clock).confirm("p1", "127.0.0.5", fields={"streak": 1})
    assert await registry.get("p1") == make_proxy("p1", clock)
    assert await redis_client.hget("pf:proxy:p1", "fail_streek") is None


async def test_counts_by_phase_follow_transitions(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    for i in range(3):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    await registry.transition("p0", Phase.UNHEALTHY)
    counts = await registry.count_by_phase("local")
    assert counts[Phase.READY] == 2
    assert counts[Phase.UNHEALTHY] == 1
    assert counts[Phase.PENDING] == 0


async def test_pagination_and_filters(registry: ProxyRegistry, clock: ManualClock) -> None:
    for i in range(7):
        zone = "zone-a" if i % 2 == 0 else "zone-b"
        await registry.create(make_proxy(f"p{i}", clock, zone=zone, labels={"n": str(i)}))
    seen: list[str] = []
    cursor = ""
    while True:
        page, cursor = await registry.page(limit=3, cursor=cursor)
        seen += [p.id for p in page]
        if not cursor:
            break
    assert seen == [f"p{i}" for i in range(7)]
    zone_b, _ = await registry.page(zone="zone-b", limit=10)
    assert [p.id for p in zone_b] == ["p1", "p3", "p5"]
    labelled, _ = await registry.page(labels={"n": "4"})
    assert [p.id for p in labelled] == ["p4"]


async def test_probe_claims_are_shared_once_per_interval(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    for i in range(5):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    first = await registry.claim_probes(interval=10, limit=3)
    second = await registry.claim_probes(interval=10, limit=10)
    assert len(first) == 3
    assert len(second) == 2
    assert not {p.id for p in first} & {p.id for p in second}
    assert await registry.claim_probes(interval=10, limit=10) == []
    clock.advance(10)
    assert len(await registry.claim_probes(interval=10, limit=10)) == 5


async def test_deleted_proxy_leaves_probe_and_lease_pools(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await registry.transition("p1", Phase.DELETING)
    await registry.transition("p1", Phase.DELETED)
    assert await registry.claim_probes(interval=1, limit=10) == []
    p = await registry.get("p1")
    assert p is not None
    assert p.phase is Phase.DELETED


async def test_probe_schedule_does_not_drift_with_late_claims(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    start = clock.now()
    for _ in range(3):
        clock.advance(0.3)  # each claim comes a little late
        assert len(await registry.claim_probes(interval=10, limit=10)) == 1
        clock.advance(10 - 0.3)
    # three claims 0.3 s late each: still due on the original 10 s grid
    assert clock.now() == start + 30
    assert [p.id for p in await registry.claim_probes(interval=10, limit=10)] == ["p1"]


async def test_update_many_reports_each_outcome(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await registry.create(make_proxy("p1", clock))
    await registry.create(make_proxy("p2", clock))
    results = await registry.update_many(
        [("p1", 0, {"ok_streak": 1}), ("p2", 5, {"ok_streak": 1}), ("ghost", None, {})]
    )
    assert results[0] == 0
    assert isinstance(results[1], Conflict)
    assert isinstance(results[2], NotFound)
    p1 = await registry.get("p1")
    assert p1 is not None
    assert p1.ok_streak == 1


async def test_a_claim_over_half_an_interval_late_schedules_the_next_from_itself(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    clock.advance(6)  # due at 0, claimed at 6 of a 10 s interval
    assert len(await registry.claim_probes(interval=10, limit=10)) == 1
    clock.advance(9.9)  # not due at 10: that would be 4 s after the last claim
    assert await registry.claim_probes(interval=10, limit=10) == []
    clock.advance(0.1)
    assert len(await registry.claim_probes(interval=10, limit=10)) == 1
