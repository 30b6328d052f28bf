"""The probe loop end to end: real Redis, real NATS, real Squid, the dev HTTPS target."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict

import redis.asyncio as aioredis
from msgspec.structs import replace
from tests.health.conftest import (
    PROVIDER,
    Collector,
    MakeProxy,
    ProxyProcess,
    RunWorker,
    events_of,
)

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.events import Event, EventData
from proxyfleet.common.wire.models import Phase, ProbeResult, Proxy
from proxyfleet.devstack.servers import free_port
from proxyfleet.health.metrics import PROBE_BACKLOG, PROXIES, UNHEALTHY_TIMEOUTS_HELD
from proxyfleet.health.prober import OK, Outcome


def _worker_events(collector: Collector, proxy: Proxy) -> list[Event]:
    """The events of `proxy` after `make_proxy` returned it (its own transitions into
    booting or ready are announced too)."""
    return [e for e in events_of(collector, proxy.id) if (e.data.gen or 0) > proxy.gen]


async def _phase(registry: ProxyRegistry, proxy_id: str) -> Phase:
    proxy = await registry.get(proxy_id)
    assert proxy is not None
    return proxy.phase


async def _wait_phase(
    registry: ProxyRegistry, proxy_id: str, phase: Phase, within: float = 5.0
) -> None:
    deadline = time.monotonic() + within
    while (current := await _phase(registry, proxy_id)) is not phase:
        assert time.monotonic() < deadline, f"{proxy_id} is {current}, expected {phase}"
        await asyncio.sleep(0.02)


async def test_good_probe_makes_a_booting_proxy_ready(
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    events: Collector,
    probe_results: Collector,
) -> None:
    proxy = await make_proxy(squid.port)
    async with run_worker():
        await events.wait_for(lambda: bool(_worker_events(events, proxy)))
        await probe_results.wait_for(
            lambda: sum(r.proxy_id == proxy.id for r in probe_results.items) >= 2
        )
    [event] = _worker_events(events, proxy)
    assert event.type == "proxy.ready"
    assert event.provider == PROVIDER
    assert event.data == EventData(from_="booting", gen=proxy.gen + 1)
    stored = await registry.get(proxy.id)
    assert stored is not None
    assert stored.phase is Phase.READY
    assert stored.gen == proxy.gen + 1
    assert stored.egress_ip == "127.0.0.1"
    assert stored.latency_ms > 0
    assert stored.last_probe_error == ""
    assert stored.ok_streak >= 2
    assert stored.fail_streak == 0
    mine = [r for r in probe_results.items if r.proxy_id == proxy.id]
    assert all(isinstance(r, ProbeResult) and r.ok for r in mine)
    assert stored.last_probe_at == max(r.time for r in mine)


async def test_wrong_credentials_never_count_as_alive(
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    events: Collector,
) -> None:
    booting = await make_proxy(squid.port, password="wrong")
    ready = await make_proxy(squid.port, password="wrong", phase=Phase.READY)
    async with run_worker():
        await _wait_phase(registry, ready.id, Phase.UNHEALTHY)
    still = await registry.get(booting.id)
    assert still is not None
    assert still.phase is Phase.BOOTING
    assert still.fail_streak >= 3
    assert still.last_probe_error == "proxy rejected credentials (407)"
    assert _worker_events(events, booting) == []
    await events.wait_for(lambda: bool(_worker_events(events, ready)))
    [event] = _worker_events(events, ready)
    assert event.type == "proxy.unhealthy"
    assert event.data == EventData(
        from_="ready", gen=ready.gen + 1, reason="proxy rejected credentials (407)"
    )
    stored = await registry.get(ready.id)
    assert stored is not None
    assert stored.reason == "proxy rejected credentials (407)"
    assert stored.fail_streak == 3


async def test_killed_proxy_turns_unhealthy_after_three_failures_and_ready_after_two(
    own_squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    events: Collector,
    probe_results: Collector,
) -> None:
    proxy = await make_proxy(own_squid.port)

    def results() -> list[ProbeResult]:
        return [r for r in probe_results.items if r.proxy_id == proxy.id]

    def mine() -> list[Event]:
        return _worker_events(events, proxy)

    async with run_worker():
        await _wait_phase(registry, proxy.id, Phase.READY)
        own_squid.kill()
        await _wait_phase(registry, proxy.id, Phase.UNHEALTHY)
        down = await registry.get(proxy.id)
        assert down is not None
        assert down.fail_streak == 3
        assert down.reason.startswith("proxy unreachable: ")
        # The store changes before the results reach us over NATS, and probing goes on:
        # read the results up to the transition's event, once all three have arrived.
        await events.wait_for(lambda: any(e.type == "proxy.unhealthy" for e in mine()))
        went_down = next(e for e in mine() if e.type == "proxy.unhealthy")
        await probe_results.wait_for(lambda: [r.ok for r in results()][-3:] == [False] * 3)
        tail = [r.ok for r in results() if r.time <= went_down.time]
        # exactly three failures in a row, the last good result just before them
        assert tail[-4:] == [True, False, False, False]

        n_before = len(results())
        own_squid.start()
        await _wait_phase(registry, proxy.id, Phase.READY)
        after = [r.ok for r in results()[n_before:]]
        assert after[-2:] == [True, True]
        assert after.count(True) == 2  # not one probe earlier
    types = [(e.type, e.data.from_) for e in _worker_events(events, proxy)]
    assert types == [
        ("proxy.ready", "booting"),
        ("proxy.unhealthy", "ready"),
        ("proxy.ready", "unhealthy"),
    ]


async def test_booting_proxy_past_its_deadline_fails_and_asks_for_its_delete(
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    events: Collector,
    delete_intents: Collector,
) -> None:
    dead_port = free_port()
    late = await make_proxy(dead_port, boot_timeout=-1.0)
    early = await make_proxy(dead_port, boot_timeout=60.0)
    async with run_worker():
        await _wait_phase(registry, late.id, Phase.FAILED)
        await delete_intents.wait_for(
            lambda: any(i["proxy_id"] == late.id for i in delete_intents.items)
        )
    failed = await registry.get(late.id)
    assert failed is not None
    assert failed.reason.startswith("not healthy within boot timeout: proxy unreachable: ")
    [event] = _worker_events(events, late)
    assert event.type == "proxy.failed"
    assert event.data == EventData(from_="booting", gen=late.gen + 1, reason=failed.reason)
    i = next(n for n, item in enumerate(delete_intents.items) if item["proxy_id"] == late.id)
    assert delete_intents.items[i] == {
        "type": "delete",
        "proxy_id": late.id,
        "resource_id": "",
        "reason": failed.reason,
    }
    assert delete_intents.headers[i]["Nats-Msg-Id"] == f"{late.id}:delete:{late.gen + 1}"
    # a booting proxy inside its boot timeout keeps failing quietly
    assert await _phase(registry, early.id) is Phase.BOOTING
    assert _worker_events(events, early) == []
    assert not any(item["proxy_id"] == early.id for item in delete_intents.items)


async def test_proxy_unhealthy_past_its_timeout_fails_and_asks_for_its_delete(
    own_squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    events: Collector,
    delete_intents: Collector,
) -> None:
    proxy = await make_proxy(own_squid.port)
    leases = LeaseStore(redis_client, SystemClock(), LeasePolicy(cooldown=0))
    async with run_worker(unhealthy_timeout=1.0):
        await _wait_phase(registry, proxy.id, Phase.READY)
        lease = await leases.grant(GrantRequest(ttl=60, proxy_id=proxy.id))
        own_squid.kill()
        await _wait_phase(registry, proxy.id, Phase.UNHEALTHY)
        await _wait_phase(registry, proxy.id, Phase.FAILED)
        await delete_intents.wait_for(
            lambda: any(i["proxy_id"] == proxy.id for i in delete_intents.items)
        )
        await events.wait_for(lambda: len(_worker_events(events, proxy)) == 3)
    failed = await registry.get(proxy.id)
    assert failed is not None
    assert failed.reason.startswith("unhealthy for 1 s: proxy unreachable: ")
    went_ready, went_down, went_failed = _worker_events(events, proxy)
    assert (went_ready.type, went_down.type) == ("proxy.ready", "proxy.unhealthy")
    assert went_failed.type == "proxy.failed"
    assert went_failed.data == EventData(from_="unhealthy", gen=proxy.gen + 3, reason=failed.reason)
    assert went_failed.time - went_down.time >= 1.0
    # The lease went with the unhealthy turn, once; the failure leaves it as it was.
    [revoked] = [e for e in events_of(events, proxy.id) if e.type == "lease.revoked"]
    assert revoked.time == went_down.time
    assert revoked.lease_id == lease.id
    assert revoked.data.reason == f"proxy unhealthy: {went_down.data.reason}"
    got = await leases.get(lease.id)
    assert got is not None
    assert (got[1], got[0].reason) == ("revoked", revoked.data.reason)
    assert failed.lease_id == ""
    i = next(n for n, item in enumerate(delete_intents.items) if item["proxy_id"] == proxy.id)
    assert delete_intents.items[i] == {
        "type": "delete",
        "proxy_id": proxy.id,
        "resource_id": "",
        "reason": failed.reason,
    }
    assert delete_intents.headers[i]["Nats-Msg-Id"] == f"{proxy.id}:delete:{proxy.gen + 3}"


async def test_no_unhealthy_timeout_fails_a_proxy_while_most_of_its_provider_is_unhealthy(
    own_squid: ProxyProcess,
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    delete_intents: Collector,
) -> None:
    dead = [await make_proxy(own_squid.port, phase=Phase.READY) for _ in range(2)]
    held = UNHEALTHY_TIMEOUTS_HELD.labels(provider=PROVIDER)
    held_before = held._value.get()
    async with run_worker(unhealthy_timeout=0.5):
        own_squid.kill()
        for proxy in dead:
            await _wait_phase(registry, proxy.id, Phase.UNHEALTHY)
        # Both past their timeout and probed again: every proxy of the provider is unhealthy.
        deadline = time.monotonic() + 5
        while held._value.get() < held_before + 4:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        for proxy in dead:
            still = await registry.get(proxy.id)
            assert still is not None
            assert still.phase is Phase.UNHEALTHY
            assert still.last_probe_at - still.updated_at >= 0.5  # a probe past its timeout
        assert delete_intents.items == []
        # Three good proxies more: two unhealthy of five is not more than half.
        for _ in range(3):
            await make_proxy(squid.port, phase=Phase.READY)
        for proxy in dead:
            await _wait_phase(registry, proxy.id, Phase.FAILED)
    for proxy in dead:
        failed = await registry.get(proxy.id)
        assert failed is not None
        assert failed.reason.startswith("unhealthy for 0.5 s: proxy unreachable: ")


async def test_two_workers_share_the_fleet_and_never_probe_a_proxy_twice_per_interval(
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    probe_results: Collector,
) -> None:
    interval = 0.4
    proxies = [await make_proxy(squid.port) for _ in range(40)]
    # Not the setup's 40 booting events: relayed while the first probes start, they delay
    # those probes' start times on a busy machine (the gaps below are between start times).
    await registry.outbox.ensure_group()
    await redis_client.xtrim(registry.outbox.key, maxlen=0)
    # All due now, as the workers start: a first claim later than half an interval after
    # a proxy's due time is followed by one at that due time + interval (no drift), which
    # the gap check below would read as a second claim.
    now = time.time()
    await redis_client.zadd("pf:probe", {p.id: now for p in proxies})
    began = time.time()
    async with (
        run_worker(interval=interval, claim_batch=8) as first,
        run_worker(interval=interval, claim_batch=8) as second,
    ):
        await asyncio.sleep(interval * 5 + 0.1)  # 6 claims per proxy at most ...
        stopping = time.time()  # ... by now (one worker still probes while the other stops)
    # 6 claims per proxy on an idle machine; starting the workers adds to the window on a
    # busy one.
    most = int((stopping - began) / interval) + 1
    assert first.probes_done > 0
    assert second.probes_done > 0
    times: dict[str, list[float]] = defaultdict(list)
    for r in probe_results.items:
        if r.time < stopping:
            times[r.proxy_id].append(r.time)
    assert set(times) == {p.id for p in proxies}
    for proxy_id, seen in times.items():
        seen.sort()
        gaps = [b - a for a, b in itertools.pairwise(seen)]
        # `time` is when the probe started, a little after its claim (more on a busy
        # machine); a proxy claimed by both workers would show a gap near zero. The first
        # gap is left out: claims are spaced, starts are not, and a first probe may start
        # as late as the workers' start-up makes it, close to the next claim at its due
        # time + interval (seen once in CI: a first gap of 46 ms, the later ones 0.41-0.45 s).
        assert 3 <= len(seen) <= most, (proxy_id, seen)
        assert min(gaps[1:]) >= interval / 2, (proxy_id, gaps)
    assert first.probes_done + second.probes_done == len(probe_results.items)
    for proxy in proxies:
        assert await _phase(registry, proxy.id) is Phase.READY


async def test_gauges_show_the_fleet_by_phase(
    squid: ProxyProcess, make_proxy: MakeProxy, registry: ProxyRegistry, run_worker: RunWorker
) -> None:
    for _ in range(3):
        await make_proxy(squid.port)
    async with run_worker():
        deadline = time.monotonic() + 5
        while PROXIES.labels(provider=PROVIDER, phase="ready")._value.get() != 3:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
    assert PROXIES.labels(provider=PROVIDER, phase="booting")._value.get() == 0
    assert PROBE_BACKLOG._value.get() >= 0


async def test_a_result_for_a_proxy_moved_meanwhile_is_dropped(
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    events: Collector,
) -> None:
    proxy = await make_proxy(squid.port)
    # the admin deletes it while its probe is in flight: the snapshot's generation is stale
    await registry.transition(proxy.id, Phase.DELETING, expected_gen=proxy.gen)
    ok = ProbeResult(proxy_id=proxy.id, time=time.time(), ok=True, latency_ms=3.0)
    never_stored = replace(proxy, id="pmissing")
    async with run_worker() as worker:
        await worker.record(proxy, Outcome(ok, OK))  # Conflict: ignored
        await worker.record(never_stored, Outcome(replace(ok, proxy_id="pmissing"), OK))
    stored = await registry.get(proxy.id)
    assert stored is not None
    assert stored.phase is Phase.DELETING
    assert stored.ok_streak == 0
    assert stored.last_probe_at == 0
    assert await registry.get("pmissing") is None
    assert [e.type for e in _worker_events(events, proxy)] == ["proxy.deleting"]  # the admin's
