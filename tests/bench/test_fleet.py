"""Seeding, the lease audit and the wrk scripts, against the test Redis (no load, no timing)."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from proxyfleet.bench.fleet import LeaseRow, audit_leases, audit_rows, release_all, seed_ready
from proxyfleet.bench.redis_memory import grant_all, used_memory
from proxyfleet.bench.wrkrun import script_source
from proxyfleet.common.core.clock import ManualClock, SystemClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import Phase


def row(lid: str, pid: str, epoch: int, start: float, end: float | None) -> LeaseRow:
    return LeaseRow(lease_id=lid, proxy_id=pid, epoch=epoch, granted_at=start, ended_at=end)


def test_audit_rows_finds_duplicates_and_overlaps() -> None:
    clean = [row("a", "p1", 1, 0, 5), row("b", "p1", 2, 5, None), row("c", "p2", 1, 1, None)]
    assert audit_rows(clean).double_grants == 0
    dup = audit_rows([*clean, row("d", "p2", 1, 9, None)])
    assert (dup.duplicate_epochs, dup.leases) == (1, 4)
    overlap = audit_rows([row("a", "p1", 1, 0, 6), row("b", "p1", 2, 5, None)])
    assert overlap.overlaps == 1
    active_twice = audit_rows([row("a", "p1", 1, 0, None), row("b", "p1", 2, 5, None)])
    assert active_twice.overlaps == 1
    assert active_twice.examples


async def test_seeded_proxies_are_ready_and_granted_once_each(
    redis_client: aioredis.Redis,
) -> None:
    clock = SystemClock()  # release_all releases on the system clock
    ids = await seed_ready(
        redis_client, count=40, start=5, now=clock.now(), provider="bp", zone="z"
    )
    assert ids[0] == "pb0000005"
    assert len(set(ids)) == 40
    registry = ProxyRegistry(redis_client, clock)
    proxy = await registry.get(ids[0])
    assert proxy is not None
    assert (proxy.phase, proxy.host, proxy.port) == (Phase.READY, "127.0.0.1", 3128)
    assert proxy.password
    assert (await registry.count_by_phase("bp"))[Phase.READY] == 40

    store = LeaseStore(redis_client, clock, LeasePolicy(cooldown=0.0))
    granted = [await store.grant(GrantRequest(ttl=60)) for _ in range(40)]
    assert {lease.proxy_id for lease in granted} == set(ids)
    with pytest.raises(Unavailable):
        await store.grant(GrantRequest(ttl=60))

    audit = await audit_leases(redis_client)
    assert (audit.leases, audit.double_grants) == (40, 0)
    assert await release_all(redis_client) == 40
    assert await store.active_count() == 0
    again = await store.grant(GrantRequest(ttl=60))  # cooldown 0: grantable at once
    assert again.epoch > max(lease.epoch for lease in granted if lease.proxy_id == again.proxy_id)
    assert (await audit_leases(redis_client)).double_grants == 0


async def test_audit_sees_an_overlap_written_into_redis(redis_client: aioredis.Redis) -> None:
    for lid, epoch, granted, ended in (("l1", "1", "10.0", "20.0"), ("l2", "2", "15.0", "")):
        items = ["id", lid, "proxy_id", "px", "epoch", epoch, "granted_at", granted]
        if ended:
            items += ["ended_at", ended]
        await redis_client.hset(f"pf:lease:{lid}", items=items)
    audit = await audit_leases(redis_client)
    assert (audit.leases, audit.overlaps) == (2, 1)


async def test_memory_helpers(redis_client: aioredis.Redis) -> None:
    before = await used_memory(redis_client)
    # Enough (about 3 MB) that a client buffer another test's connection frees meanwhile
    # (tens of KB) cannot hide the growth: the server is shared by the session's tests.
    await seed_ready(redis_client, count=2_000, now=ManualClock().now(), provider="bp", zone="z")
    assert await used_memory(redis_client) - before > 1_000_000
    store = LeaseStore(redis_client, ManualClock(), LeasePolicy(cooldown=0.0))
    await grant_all(store, 20)
    assert await store.active_count() == 20


def test_wrk_scripts_carry_the_reporting_helpers() -> None:
    static, cycle = script_source("static"), script_source("cycle")
    for source in (static, cycle):
        assert "function done(summary, latency, requests)" in source
        assert "function setup(thread)" in source
    assert "PF_BODY" in static
    assert "function request()" in cycle
    assert "function response(status" in cycle
    assert '"/release"' in cycle
