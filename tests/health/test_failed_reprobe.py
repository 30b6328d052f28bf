"""Failed external proxies are probed again with backoff, and a good probe makes one ready;
a managed failed proxy (its delete queued) is never probed again."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.domain.lifecycle import decide_after_probe
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy

INTERVAL = 5.0
WAITS = (30.0, 100.0)


@pytest.fixture
def manual() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(redis_client: aioredis.Redis, manual: ManualClock) -> ProxyRegistry:
    return ProxyRegistry(redis_client, manual)


async def _ready(store: ProxyRegistry, clock: ManualClock, pid: str, *, external: bool) -> None:
    now = clock.now()
    proxy = Proxy(
        id=pid,
        provider="static",
        zone="z1",
        phase=Phase.PENDING,
        gen=0,
        username="u",
        password="p",
        created_at=now,
        updated_at=now,
        external=external,
    )
    assert await store.create(proxy)
    await store.transition(pid, Phase.PROVISIONING)
    await store.transition(pid, Phase.BOOTING, host="127.0.0.1", port=3128)
    await store.transition(pid, Phase.READY)


async def _claimed(store: ProxyRegistry) -> list[str]:
    claim = await store.claim_probe_share(INTERVAL, 100, "r1", failed_wait=WAITS)
    return [p.id for p in claim.proxies]


async def _probe_times(store: ProxyRegistry, clock: ManualClock, until: float) -> list[float]:
    """When the failed proxy is claimed, second by second until `until`, each probe
    failing (its time written as health writes it)."""
    times = []
    while clock.now() < until:
        clock.advance(1.0)
        for pid in await _claimed(store):
            times.append(clock.now())
            await store.update(pid, last_probe_at=clock.now())
    return times


async def test_a_failed_external_proxy_is_probed_with_doubling_waits(
    store: ProxyRegistry, manual: ManualClock
) -> None:
    await _ready(store, manual, "ext", external=True)
    assert await _claimed(store) == ["ext"]
    await store.transition("ext", Phase.FAILED, reason="gone", last_probe_at=manual.now())
    start = manual.now()
    times = await _probe_times(store, manual, start + 400)
    # each wait as long as it has been failed: 30 s at least, 100 s at most
    assert [t - start for t in times] == [30, 60, 120, 220, 320]
    assert (await store.get("ext")).phase is Phase.FAILED  # type: ignore[union-attr]


async def test_a_failed_managed_proxy_is_never_probed_again(
    store: ProxyRegistry, manual: ManualClock
) -> None:
    await _ready(store, manual, "managed", external=False)
    assert await _claimed(store) == ["managed"]
    await store.transition("managed", Phase.FAILED, reason="gone", last_probe_at=manual.now())
    assert await store.next_probe_at("managed") is None
    assert await _probe_times(store, manual, manual.now() + 1000) == []


async def test_a_managed_proxy_left_on_the_schedule_while_failed_is_dropped_unprobed(
    store: ProxyRegistry, manual: ManualClock, redis_client: aioredis.Redis
) -> None:
    await _ready(store, manual, "managed", external=False)
    await store.transition("managed", Phase.FAILED, reason="gone")
    await redis_client.zadd("pf:probe", {"managed": manual.now()})  # as a stale writer might
    assert await _claimed(store) == []
    assert await store.next_probe_at("managed") is None


async def test_an_external_proxy_back_to_ready_is_probed_on_the_interval(
    store: ProxyRegistry, manual: ManualClock
) -> None:
    await _ready(store, manual, "ext", external=True)
    await store.transition("ext", Phase.FAILED, reason="gone", last_probe_at=manual.now())
    manual.advance(30)
    assert await _claimed(store) == ["ext"]
    await store.transition("ext", Phase.READY)  # its probe was good
    assert await _claimed(store) == ["ext"]  # at once: ready, it is watched closely again
    manual.advance(INTERVAL)
    assert await _claimed(store) == ["ext"]


async def test_a_failed_external_proxy_never_probed_is_probed_at_once(
    store: ProxyRegistry, manual: ManualClock
) -> None:
    now = manual.now()
    proxy = Proxy(
        id="ext",
        provider="static",
        zone="z1",
        phase=Phase.PENDING,
        gen=0,
        username="u",
        password="p",
        created_at=now,
        updated_at=now,
        external=True,
    )
    assert await store.create(proxy)
    await store.transition("ext", Phase.FAILED, reason="bad entry")
    assert await _claimed(store) == ["ext"]


def test_a_good_probe_makes_a_failed_proxy_ready_and_a_bad_one_keeps_it_failed() -> None:
    good = decide_after_probe(Phase.FAILED, True, 0, 9, now=100.0, boot_deadline=0.0, since=10.0)
    assert (good.next_phase, good.ok_streak, good.fail_streak) == (Phase.READY, 1, 0)
    bad = decide_after_probe(Phase.FAILED, False, 0, 9, now=100.0, boot_deadline=0.0, since=10.0)
    assert (bad.next_phase, bad.fail_streak) == (None, 10)
