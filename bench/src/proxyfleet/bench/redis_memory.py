"""Redis memory per registered proxy and per active lease (INFO memory used_memory deltas).

N proxies are seeded ready (the registry's own scripts) and given each its own exit
address through health's egress script (so the address index is counted), then N leases
granted through the real LeaseStore; each delta is divided by N. A lease's delta is net:
it adds the lease hash, its expiry entry and its address holds, and takes the proxy out of
the availability sets.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

import redis.asyncio as aioredis

from proxyfleet.bench.apiserver import PROVIDER, ZONE
from proxyfleet.bench.egress_bench import address_of
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.fleet import seed_ready
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import GrantRequest, LeaseStore, connect_redis
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.common.store.lease_terms import LeasePolicy

PROXY_KB = 2.0
LEASE_KB = 1.0
CONCURRENCY = 32


async def used_memory(client: aioredis.Redis) -> int:
    info = cast(dict[str, object], await client.info("memory"))
    return int(str(info["used_memory"]))


async def grant_all(store: LeaseStore, count: int) -> None:
    """`count` grants through the store, CONCURRENCY at a time."""
    left = iter(range(count))

    async def worker() -> None:
        for _ in left:
            await store.grant(GrantRequest(ttl=3600.0, holder="bench-memory"))

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def confirm_addresses(client: aioredis.Redis, ids: list[str]) -> None:
    """Each proxy's exit address confirmed as health confirms it, CONCURRENCY at a time;
    one address each (10.x.y.z: the shared ones of egress_bench are not shared here)."""
    store = EgressStore(client, SystemClock())
    left = iter(enumerate(ids))

    async def worker() -> None:
        for i, pid in left:
            await store.confirm(pid, address_of(i * 10 // 9))  # skips the shared indexes

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    await client.xtrim("pf:outbox", maxlen=0)


async def measure(client: aioredis.Redis, count: int) -> tuple[float, float]:
    """(bytes per registered proxy, bytes per active lease) on a flushed database."""
    await client.flushdb()
    before = await used_memory(client)
    ids = await seed_ready(client, count=count, now=time.time(), provider=PROVIDER, zone=ZONE)
    await confirm_addresses(client, ids)
    proxies = await used_memory(client)
    policy = LeasePolicy(cooldown=0.0, max_ttl=3600.0)
    await grant_all(LeaseStore(client, SystemClock(), policy), count)
    leases = await used_memory(client)
    return (proxies - before) / count, (leases - proxies) / count


async def run(env: BenchEnv) -> list[Figure]:
    count = 10_000 if env.quick else 50_000
    client = connect_redis(env.redis_url)
    try:
        per_proxy, per_lease = await measure(client, count)
        await client.flushdb()
    finally:
        await client.aclose()
    note = f"INFO used_memory delta over {count:,}"
    return [
        Figure(
            what="Redis memory per registered (ready) proxy",
            value=per_proxy / 1024,
            unit="KB",
            target="<= 2 KB",
            met=per_proxy / 1024 <= PROXY_KB,
            notes=f"{note} proxies, each with its own confirmed exit address (the address "
            "index included)",
            extra={"bytes": per_proxy},
        ),
        Figure(
            what="Redis memory per active lease",
            value=per_lease / 1024,
            unit="KB",
            target="<= 1 KB",
            met=per_lease / 1024 <= LEASE_KB,
            notes=f"{note} leases, each holding its proxy's exit address (net: the proxy "
            "leaves the availability sets)",
            extra={"bytes": per_lease},
        ),
    ]
