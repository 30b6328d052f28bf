"""A Redis failover under grant load (a primary, two replicas, three Sentinels on loopback):
with --redis-wait-replicas 1 every grant a client saw acknowledged is on the promoted
replica, and no proxy is held by two acknowledged leases at once (docs/decisions/store.md
R10). Two replicas, so the new primary has one to confirm writes. The clients find the
primary through Sentinel. The failover is an outage (StoreUnavailable: 503) until the
other replica has synced with the new primary; the time from the kill to the first
acknowledged grant is measured."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock, SystemClock
from proxyfleet.common.core.errors import Conflict, StoreUnavailable, Unavailable
from proxyfleet.common.store import (
    GrantRequest,
    LeaseStore,
    ProxyRegistry,
    ReplicaWait,
    ScriptMux,
    connect_redis,
)
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.devstack.sentinel import SentinelGroup, port_of, start_sentinel_group

PROXIES = 12
WORKERS = 8
FAILOVER_WITHIN = 30.0


@dataclass
class Held:
    """One acknowledged lease as its client saw it."""

    lease_id: str
    proxy_id: str
    acked: float
    released: float | None = None
    """When its release was acknowledged (None: never, in the run)."""


def double_holds(held: list[Held], end: float) -> list[tuple[Held, Held]]:
    """Pairs of acknowledged leases on one proxy whose holds overlap (a hold lasts from its
    grant's acknowledgement until its release's, or the end of the run)."""
    by_proxy: dict[str, list[Held]] = {}
    for h in held:
        by_proxy.setdefault(h.proxy_id, []).append(h)
    pairs = []
    for leases in by_proxy.values():
        leases.sort(key=lambda h: h.acked)
        for i, first in enumerate(leases):
            for later in leases[i + 1 :]:
                if later.acked < (first.released if first.released is not None else end):
                    pairs.append((first, later))
    return pairs


def test_the_audit_counts_an_overlap_and_nothing_else() -> None:
    a, b = Held("l1", "p1", 1.0, 2.0), Held("l2", "p1", 2.5, None)
    c = Held("l3", "p1", 2.6, 3.0)  # granted while l2 is still held
    assert double_holds([a, b], end=9.0) == []
    assert double_holds([a, b, c], end=9.0) == [(b, c)]
    assert double_holds([Held("l4", "p2", 1.0, None), Held("l5", "p3", 1.5, None)], 9.0) == []


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    """Two replicas: after a failover the new primary still has one, so writes can be
    confirmed again as soon as it has synced."""
    sentinels = start_sentinel_group(tmp_path / "sentinel", replicas=2)
    yield sentinels
    sentinels.stop()


async def test_a_failover_under_load_loses_no_acknowledged_grant_and_doubles_none(
    group: SentinelGroup,
) -> None:
    client = connect_redis(group.url)
    clock = ManualClock()
    registry = ProxyRegistry(client, clock)
    for i in range(PROXIES):
        await make_ready(registry, make_proxy(f"pf{i}", clock))
    mux = ScriptMux.from_client(client, ReplicaWait(1, 0.5))
    leases = LeaseStore(client, SystemClock(), LeasePolicy(cooldown=0), mux=mux)
    held: list[Held] = []
    outages = 0
    killed_at: float | None = None
    first_after: float | None = None
    stop = asyncio.Event()

    async def worker() -> None:
        nonlocal outages, first_after
        while not stop.is_set():
            try:
                lease = await leases.grant(GrantRequest(ttl=30, holder="w"))
            except Unavailable:  # every proxy held right now
                await asyncio.sleep(0.01)
                continue
            except StoreUnavailable:  # the failover: 503 to an API client
                outages += 1
                await asyncio.sleep(0.05)
                continue
            hold = Held(lease.id, lease.proxy_id, time.monotonic())
            held.append(hold)
            if killed_at is not None and first_after is None:
                first_after = hold.acked
            await asyncio.sleep(0.005)
            while time.monotonic() < hold.acked + FAILOVER_WITHIN:  # through the outage too
                try:
                    await leases.release(lease.id, lease.epoch)
                    hold.released = time.monotonic()
                    break
                except StoreUnavailable:
                    outages += 1
                    await asyncio.sleep(0.05)
                except Conflict:  # an earlier try was made but not acknowledged: released
                    hold.released = time.monotonic()
                    break

    old_primary = group.redis[0]
    tasks = [asyncio.create_task(worker()) for _ in range(WORKERS)]
    try:
        await asyncio.sleep(1.0)
        granted_before = len(held)
        old_primary.process.kill()  # kill -9 under load
        killed_at = time.monotonic()
        deadline = killed_at + FAILOVER_WITHIN
        replicas = {port_of(server) for server in group.redis[1:]}
        while group.primary_port() not in replicas:
            assert time.monotonic() < deadline, "Sentinel promoted no replica within 30 s"
            await asyncio.sleep(0.1)
        promoted_at = time.monotonic()
        while first_after is None:
            assert time.monotonic() < deadline, "no grant within 30 s of the kill"
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # load on the new primary
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        end = time.monotonic()
        await mux.aclose()
    assert granted_before > 0
    assert len(held) > granted_before
    assert outages > 0  # the failover was seen, as outages (503s)
    # Every acknowledged grant is on the promoted replica (a WAIT saw it there).
    states = [await client.hget(f"pf:lease:{h.lease_id}", "state") for h in held]
    assert [s for s in states if s not in ("active", "released")] == []
    assert double_holds(held, end) == []
    print(f"failover: {len(held)} grants acknowledged, {outages} refused as outages; a replica"
          f" promoted {promoted_at - killed_at:.1f} s and the first grant acknowledged"
          f" {first_after - killed_at:.1f} s after the kill")  # fmt: skip
    await client.aclose()
