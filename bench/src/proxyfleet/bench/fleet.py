"""Seeding ready proxies fast, and auditing the leases a run left in Redis.

Seeding runs the registry's own Lua scripts (create, then one transition to ready), queued
on pipelines of a few thousand calls: 100,000 proxies in seconds, not through the HTTP API.
"""

from __future__ import annotations

import itertools
import secrets
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, cast

import redis.asyncio as aioredis
from msgspec.structs import replace

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.store import LeaseStore
from proxyfleet.common.store.codec import encode_value
from proxyfleet.common.store.creates import create_args
from proxyfleet.common.store.fastid import fast_id
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.store.scripts import Scripts
from proxyfleet.common.wire.models import Phase, Proxy

PIPELINE = 2_000
DELETED_TTL = 86_400


def bench_proxy(index: int, now: float, provider: str, zone: str, prefix: str = "pb") -> Proxy:
    """A proxy shaped like a real one (credentials, resource id, a label)."""
    pid = f"{prefix}{index:07d}"
    return Proxy(
        id=pid,
        provider=provider,
        zone=zone,
        phase=Phase.PENDING,
        gen=0,
        username=f"pf-{secrets.token_hex(4)}",
        password=secrets.token_urlsafe(18),
        created_at=now,
        updated_at=now,
        labels={"pool": "bench"},
        resource_id=f"pf-{pid}",
    )


async def seed_ready(
    client: aioredis.Redis,
    *,
    count: int,
    start: int = 0,
    now: float,
    provider: str,
    zone: str,
    namespace: str = "pf",
    port: int = 3128,
    pool: str = "",
) -> list[str]:
    """Create `count` proxies (ids pb<start>...) and move each to ready; returns the ids.
    With `pool`, they are its members (as the pool controller makes them). Seeding is no
    lifecycle: its proxy.ready events are dropped from the outbox."""
    scripts = Scripts(client, namespace)
    ids: list[str] = []
    for first in range(start, start + count, PIPELINE):
        async with client.pipeline(transaction=False) as pipe:
            for i in range(first, min(first + PIPELINE, start + count)):
                # Stored as provisioning: a pending proxy would queue a create intent.
                proxy = replace(bench_proxy(i, now, provider, zone), phase=Phase.PROVISIONING)
                if pool:
                    proxy = replace(proxy, pool=pool, labels={POOL_LABEL: pool})
                args = create_args([proxy], None, None)
                await scripts.queue(pipe, "create", fast_id("e"), repr(now), *args)
                # ARGV of transition.lua: id, expected gen (-1 any), allowed from ('' any),
                # to, now, deleted ttl, unleased only, event id, delete reason, then
                # field/value pairs.
                fields = ["host", "127.0.0.1", "port", encode_value(port), "last_ok_at", repr(now)]
                await scripts.queue(
                    pipe, "transition", proxy.id, -1, "", Phase.READY.value, repr(now),
                    DELETED_TTL, "0", fast_id("e"), "", *fields,
                )  # fmt: skip
                ids.append(proxy.id)
            for res in await pipe.execute():
                if res == 0 or (isinstance(res, list) and int(res[0]) != 1):
                    raise RuntimeError(f"seeding failed: {res!r}")
        await client.xtrim(f"{namespace}:outbox", maxlen=0)  # before a relay takes them
    return ids


@dataclass(frozen=True, slots=True)
class LeaseRow:
    lease_id: str
    proxy_id: str
    epoch: int
    granted_at: float
    ended_at: float | None
    """None while the lease is active."""


@dataclass(frozen=True, slots=True)
class Audit:
    leases: int
    duplicate_epochs: int
    """(proxy, epoch) pairs held by more than one lease."""
    overlaps: int
    """Pairs of leases of one proxy whose [granted_at, ended_at] intervals overlap."""
    examples: tuple[str, ...] = ()

    @property
    def double_grants(self) -> int:
        return self.duplicate_epochs + self.overlaps


def audit_rows(rows: list[LeaseRow]) -> Audit:
    """Pure: every (proxy, epoch) once; per proxy, each lease ends before the next starts
    (an active lease never ends), and epochs rise with the grant time."""
    by_proxy: dict[str, list[LeaseRow]] = defaultdict(list)
    seen: dict[tuple[str, int], str] = {}
    duplicates = overlaps = 0
    examples: list[str] = []
    for row in rows:
        key = (row.proxy_id, row.epoch)
        if key in seen:
            duplicates += 1
            examples.append(f"{row.proxy_id} epoch {row.epoch}: {seen[key]} and {row.lease_id}")
        seen[key] = row.lease_id
        by_proxy[row.proxy_id].append(row)
    for proxy_id, leases in by_proxy.items():
        leases.sort(key=lambda r: (r.epoch, r.granted_at))
        for prev, nxt in itertools.pairwise(leases):
            ended = float("inf") if prev.ended_at is None else prev.ended_at
            if nxt.granted_at < ended or nxt.granted_at < prev.granted_at:
                overlaps += 1
                examples.append(f"{proxy_id}: {prev.lease_id} overlaps {nxt.lease_id}")
    return Audit(len(rows), duplicates, overlaps, tuple(examples[:5]))


async def lease_rows(client: aioredis.Redis, namespace: str = "pf") -> list[LeaseRow]:
    """Every lease hash (active, and the tombstones of ended ones)."""
    keys = [k async for k in client.scan_iter(match=f"{namespace}:lease:*", count=2_000)]
    rows: list[LeaseRow] = []
    for first in range(0, len(keys), PIPELINE):
        async with client.pipeline(transaction=False) as pipe:
            for key in keys[first : first + PIPELINE]:
                pipe.hmget(key, "id", "proxy_id", "epoch", "granted_at", "ended_at")
            values = cast(list[list[Any]], await pipe.execute())
        for lid, pid, epoch, granted, ended in values:
            if lid is None or pid is None:
                continue
            rows.append(
                LeaseRow(
                    lease_id=str(lid),
                    proxy_id=str(pid),
                    epoch=int(epoch),
                    granted_at=float(granted),
                    ended_at=float(ended) if ended else None,
                )
            )
    return rows


async def audit_leases(client: aioredis.Redis, namespace: str = "pf") -> Audit:
    return audit_rows(await lease_rows(client, namespace))


async def release_all(client: aioredis.Redis, namespace: str = "pf") -> int:
    """Release every active lease through the real store (what a load left mid-cycle)."""
    store = LeaseStore(client, SystemClock(), LeasePolicy(cooldown=0.0), namespace=namespace)
    ids = cast(list[str], await client.zrange(f"{namespace}:leases", 0, -1))
    released = 0
    for lease_id in ids:
        epoch = await client.hget(f"{namespace}:lease:{lease_id}", "epoch")
        if epoch is None:
            continue
        try:
            await store.release(lease_id, int(epoch))
        except (Conflict, NotFound):
            continue
        released += 1
    return released
