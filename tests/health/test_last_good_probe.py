"""Health records when each proxy last answered a probe (what grants check for freshness),
and a proxy that dies under a lease has its lease revoked once health turns it unhealthy.
Real Redis, NATS, Squid and the dev HTTPS target."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis
from tests.health.conftest import Collector, MakeProxy, ProxyProcess, RunWorker, events_of

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import Phase, ProbeResult
from proxyfleet.health.prober import ERROR, Outcome


async def _wait_phase(registry: ProxyRegistry, proxy_id: str, phase: Phase) -> None:
    deadline = time.monotonic() + 10.0
    while True:
        proxy = await registry.get(proxy_id)
        assert proxy is not None
        if proxy.phase is phase:
            return
        assert time.monotonic() < deadline, f"{proxy_id} is {proxy.phase}, expected {phase}"
        await asyncio.sleep(0.02)


async def test_each_good_probe_records_its_time_and_a_failure_keeps_it(
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    probe_results: Collector,
) -> None:
    proxy = await make_proxy(squid.port)
    assert proxy.last_ok_at == 0.0

    def mine() -> list[ProbeResult]:
        return [r for r in probe_results.items if r.proxy_id == proxy.id]

    async with run_worker() as worker:
        await probe_results.wait_for(lambda: sum(r.ok for r in mine()) >= 3)
        await _wait_phase(registry, proxy.id, Phase.READY)
    stored = await registry.get(proxy.id)  # the worker stopped: nothing writes now
    assert stored is not None
    oks = [r.time for r in mine() if r.ok]
    assert stored.last_ok_at == max(oks)  # written with the probe's own streaks
    assert stored.last_ok_at == stored.last_probe_at

    failed = ProbeResult(proxy_id=proxy.id, time=time.time(), ok=False, latency_ms=0.0, error="x")
    await worker.record(stored, Outcome(failed, ERROR))
    after = await registry.get(proxy.id)
    assert after is not None
    assert after.last_probe_at == failed.time
    assert after.last_ok_at == stored.last_ok_at  # a failure never moves it


async def test_a_proxy_that_dies_under_a_lease_has_it_revoked(
    own_squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    events: Collector,
) -> None:
    leases = LeaseStore(redis_client, SystemClock(), LeasePolicy(max_probe_age=20.0))
    proxy = await make_proxy(own_squid.port)
    async with run_worker():
        await _wait_phase(registry, proxy.id, Phase.READY)
        lease = await leases.grant(GrantRequest(ttl=300, proxy_id=proxy.id))
        own_squid.kill()
        await _wait_phase(registry, proxy.id, Phase.UNHEALTHY)
    got = await leases.get(lease.id)
    assert got is not None
    assert got[1] == "revoked"
    assert got[0].reason.startswith("proxy unhealthy: proxy unreachable")
    with pytest.raises(Conflict) as refused:
        await leases.renew(lease.id, lease.epoch, 60)
    assert refused.value.code == "lease_revoked"
    await events.wait_for(
        lambda: any(e.type == "lease.revoked" for e in events_of(events, proxy.id))
    )
