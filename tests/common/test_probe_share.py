"""Probe claims shared by health replicas: a fair share per claim, each proxy on a grid of
its own (while replicas share) so proxies created together are not due together, never
twice in an interval."""

from __future__ import annotations

import itertools

import pytest
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase

INTERVAL = 10.0


async def test_each_claim_takes_a_share_of_the_due_proxies(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    for replica in "abc":  # three replicas seen: nothing due yet
        claim = await registry.claim_probe_share(INTERVAL, 100, replica)
        assert claim.proxies == []
    for i in range(30):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    a = await registry.claim_probe_share(INTERVAL, 100, "a")
    b = await registry.claim_probe_share(INTERVAL, 100, "b")
    c = await registry.claim_probe_share(INTERVAL, 100, "c")
    assert (a.replicas, b.replicas, c.replicas) == (3, 3, 3)
    # ceil(30 / 3), then ceil(20 / 3), then ceil(13 / 3); the rest at their next claims
    assert [len(x.proxies) for x in (a, b, c)] == [10, 7, 5]
    ids = [p.id for x in (a, b, c) for p in x.proxies]
    assert len(set(ids)) == len(ids)


async def test_a_claim_never_exceeds_its_limit_and_takes_at_least_one(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    for replica in "abcd":
        await registry.claim_probe_share(INTERVAL, 100, replica)
    for i in range(2):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    assert len((await registry.claim_probe_share(INTERVAL, 100, "a")).proxies) == 1
    assert len((await registry.claim_probe_share(INTERVAL, 100, "b")).proxies) == 1
    for i in range(2, 40):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    assert len((await registry.claim_probe_share(INTERVAL, 3, "c")).proxies) == 3


async def test_a_replica_counts_until_an_interval_without_claims_or_its_leaving(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    for replica in "abc":
        await registry.claim_probe_share(INTERVAL, 10, replica)
    await registry.leave_probe_share("c")
    assert (await registry.claim_probe_share(INTERVAL, 10, "a")).replicas == 2
    clock.advance(INTERVAL / 2)
    assert (await registry.claim_probe_share(INTERVAL, 10, "a")).replicas == 2
    clock.advance(INTERVAL / 2 + 0.1)  # b silent for more than an interval
    assert (await registry.claim_probe_share(INTERVAL, 10, "a")).replicas == 1
    assert (await registry.claim_probes(INTERVAL, 10)) == []  # unnamed: no share bound


async def keep_b_counted(registry: ProxyRegistry, clock: ManualClock, seconds: float) -> None:
    """Let `seconds` pass while replica b stays counted (claiming nothing)."""
    while seconds > 0:
        step = min(seconds, INTERVAL / 3)
        clock.advance(step)
        seconds -= step
        claim = await registry.claim_probe_share(INTERVAL, 0, "b")
        assert claim.proxies == []


async def claim_as_a(registry: ProxyRegistry) -> list[str]:
    claim = await registry.claim_probe_share(INTERVAL, 100, "a")
    assert claim.replicas == 2  # shared with b
    return [p.id for p in claim.proxies]


async def test_proxies_created_together_are_spread_over_the_interval(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await keep_b_counted(registry, clock, 0.1)
    for i in range(60):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    due = clock.now()
    shares = []
    for replica in "abababababab":  # each claim half of what is still due, at least one
        shares.append(len((await registry.claim_probe_share(INTERVAL, 100, replica)).proxies))
    assert shares[:4] == [30, 15, 8, 4]
    assert sum(shares) == 60
    nexts = [await registry.next_probe_at(f"p{i}") for i in range(60)]
    offsets = sorted(n - due - INTERVAL for n in nexts if n is not None)
    assert len(offsets) == 60
    assert all(0 <= o < INTERVAL for o in offsets)  # one to two intervals after this probe
    tenths = {int(o / INTERVAL * 10) for o in offsets}
    assert tenths == set(range(10))  # every tenth of the interval has some


async def test_a_proxy_stays_on_its_grid_and_is_never_due_twice_in_an_interval(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    await keep_b_counted(registry, clock, 0.1)
    await make_ready(registry, make_proxy("p1", clock))
    previous = clock.now()
    for lateness in (0.0, 3.0, 0.1, 9.9, 25.0, 0.0):  # 25: a backlog of over two intervals
        await keep_b_counted(registry, clock, lateness)
        assert await claim_as_a(registry) == ["p1"]
        nxt = await registry.next_probe_at("p1")
        assert nxt is not None
        assert nxt - previous >= INTERVAL - 1e-6  # never due again within the interval
        # one interval after it was due (after the claim when that was over half an
        # interval late), then onto its grid
        base = previous + INTERVAL if lateness <= INTERVAL / 2 else clock.now() + INTERVAL
        assert nxt - base < INTERVAL
        assert nxt - clock.now() >= INTERVAL / 2  # the next claim half an interval on
        assert await claim_as_a(registry) == []
        previous = nxt
        await keep_b_counted(registry, clock, nxt - clock.now() + 1e-3)  # due (float sums)
    grid = [previous]
    for _ in range(3):  # on time from here: exactly one interval apart
        assert len(await claim_as_a(registry)) == 1
        nxt = await registry.next_probe_at("p1")
        assert nxt is not None
        grid.append(nxt)
        await keep_b_counted(registry, clock, nxt - clock.now() + 1e-3)
    assert [b - a for a, b in itertools.pairwise(grid)] == pytest.approx([INTERVAL] * 3)


async def test_a_booting_proxy_keeps_its_pace(registry: ProxyRegistry, clock: ManualClock) -> None:
    await keep_b_counted(registry, clock, 0.1)
    assert await registry.create(make_proxy("p1", clock))
    await registry.transition("p1", Phase.PROVISIONING)
    await registry.transition("p1", Phase.BOOTING, host="127.0.0.1", port=3128)
    due = clock.now()
    assert await claim_as_a(registry) == ["p1"]
    assert await registry.next_probe_at("p1") == pytest.approx(due + INTERVAL)


async def test_a_lone_replica_keeps_proxies_due_together(
    registry: ProxyRegistry, clock: ManualClock
) -> None:
    for i in range(5):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    due = clock.now()
    claim = await registry.claim_probe_share(INTERVAL, 100, "a")
    assert (len(claim.proxies), claim.replicas) == (5, 1)
    nexts = [await registry.next_probe_at(f"p{i}") for i in range(5)]
    assert nexts == [pytest.approx(due + INTERVAL)] * 5
