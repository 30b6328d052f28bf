"""Pool benchmarks: a 50-proxy local pool made full again after 10 members are killed (their
Squids, kill -9) and after 10 are deleted; the lowest ready count during a full recycle of
50; the controller's CPU per pass over 10,000 pooled proxies (`pools_cpu`).

What runs: the whole system as separate processes (proxyfleet.devstack.stack: api,
provisioner-local, health, gc, pools and the HTTPS target) on this run's NATS and Redis,
with the dev stack's intervals (health probes and pool passes every 2 s, the local
provisioner's supervisor every 2 s); every member is a real Squid. The pool is declared
through the store (owner: the API); its members are read from Redis every 100 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec
import redis.asyncio as aioredis

from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.pools_cpu import cpu_figure, pass_cost
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec
from proxyfleet.common.store import PoolStore, connect_redis
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import stop_local_proxies
from proxyfleet.devstack.stack import Stack

POOL = "bench"
INSTALLATION = "bench-pools"
BACK_TARGET = 10.0
SAMPLE_EVERY = 0.1
PHASE, CREATED, WITHHELD = 2, 3, 7
"""Indexes of phase, created_at and withheld in PoolStore.member_rows."""
RECYCLE_AGE = 20.0
"""max_age of the recycle: a replacement is not due before the recycle is well along."""


@dataclass
class Members:
    """The pool's members as Redis has them, sampled every SAMPLE_EVERY while running."""

    store: PoolStore
    lowest: int = 1 << 30
    samples: int = 0
    running: bool = False
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def rows(self) -> dict[str, list[str | None]]:
        ids = await self.store.members(POOL)
        return dict(zip(ids, await self.store.member_rows(ids), strict=True))

    async def ready(self) -> set[str]:
        """Members ready and in rotation (not draining, not quarantined)."""
        return {
            i for i, r in (await self.rows()).items() if r[PHASE] == "ready" and not r[WITHHELD]
        }

    async def live(self) -> set[str]:
        gone = ("deleting", "deleted", "failed")
        return {i for i, r in (await self.rows()).items() if r[PHASE] and r[PHASE] not in gone}

    def start(self) -> None:
        self.lowest, self.samples, self.running = 1 << 30, 0, True
        self._task = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        self.running = False
        if self._task is not None:
            await self._task

    async def _sample(self) -> None:
        while self.running:
            self.lowest = min(self.lowest, len(await self.ready()))
            self.samples += 1
            await asyncio.sleep(SAMPLE_EVERY)


async def wait(what: str, check: Callable[[], Awaitable[bool]], within: float) -> float:
    """Seconds until check() holds; TimeoutError past `within` seconds."""
    t0 = time.monotonic()
    while not await check():
        if time.monotonic() - t0 > within:
            raise TimeoutError(f"{what}: not within {within:.0f} s")
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


async def run(env: BenchEnv) -> list[Figure]:
    size, killed = (10, 3) if env.quick else (50, 10)
    cpu_members = 2_000 if env.quick else 10_000
    client = connect_redis(env.redis_url)
    try:
        figures = []
        for pools, quarantine in ((1, False), (10, False), (1, True)):
            cost = await pass_cost(client, cpu_members, pools, quarantine=quarantine)
            if cost.profile:
                print(f"pool controller pass over {cpu_members:,} missed its target:")
                print(cost.profile)
            figures.append(cpu_figure(cost, cpu_members, pools, quarantine=quarantine))
        await client.flushdb()
        base = env.base_dir / "pools"
        base.mkdir(mode=0o711, parents=True, exist_ok=True)
        base.chmod(0o711)  # local proxies are Squids running as user `proxy`
        stack = Stack(_options(env, base))
        try:
            await asyncio.to_thread(stack.start)
            members = Members(PoolStore(client, SystemClock()))
            return [*await _measure(stack, members, client, base, size, killed), *figures]
        finally:
            await asyncio.to_thread(stack.stop)
            stop_local_proxies(base / "local-proxies")  # the Redis is not the stack's own
    finally:
        await client.aclose()


def _options(env: BenchEnv, base: Path) -> StackOptions:
    return StackOptions.on_free_ports(
        base_dir=base,
        nats_url=env.nats_url,
        redis_url=env.redis_url,
        boot_timeout=60.0,
        gc_min_age=600.0,  # nothing here is an orphan: GC only runs, it never deletes
        echo=None,
        log_level="warning",
        installation_id=INSTALLATION,
    )


async def _measure(
    stack: Stack, members: Members, client: aioredis.Redis, base: Path, size: int, killed: int
) -> list[Figure]:
    spec = PoolSpec(provider="local", size=size, max_surge=max(1, size // 10), drain_timeout=30)
    await members.store.apply(POOL, spec, Owner.API)
    filled = await wait(f"{size} ready", lambda: _full(members, size), 180)
    restarted, lowest_killed = await _kill(members, client, base, size, killed)
    replaced, lowest_deleted = await _delete(stack, members, size, killed)
    recycle_took = await _recycle(members, spec, size)
    await members.store.apply(POOL, spec, Owner.API)
    return [
        Figure(
            what=f"declare a {size}-proxy local pool -> all ready",
            value=round(filled, 2),
            unit="s",
            target="reported",
            notes="PoolStore.apply, then the controller's creates, provisioner-local and health",
        ),
        _back(
            f"{size}-proxy local pool, kill -9 the Squids of {killed} members -> all serving again",
            restarted,
            f"the local provisioner's supervisor restarts a dead Squid on its port (no member "
            f"is replaced); until each has a good probe on its new process; lowest ready in "
            f"rotation meanwhile {lowest_killed} of {size}",
        ),
        _back(
            f"{size}-proxy local pool, {killed} members deleted (API) -> replaced, {size} ready",
            replaced,
            f"DELETE /v1/proxies/{{id}} for each; the pool controller creates the "
            f"replacements; lowest ready in rotation meanwhile {lowest_deleted} of {size}",
        ),
        Figure(
            what=f"lowest ready count during a full recycle of {size} (max_surge {spec.max_surge})",
            value=float(members.lowest),
            unit="proxies",
            target=f">= {size} (size)",
            met=members.lowest >= size,
            notes=(
                f"members ready and in rotation, read from Redis every 100 ms ({members.samples} "
                f"samples); max_age {RECYCLE_AGE:g} s declared once every member was older, "
                f"so all were due at once; "
                f"the recycle took {recycle_took:.1f} s"
            ),
            extra={"recycle_s": round(recycle_took, 1), "samples": float(members.samples)},
        ),
    ]


async def _kill(
    members: Members, client: aioredis.Redis, base: Path, size: int, killed: int
) -> tuple[float, int]:
    """kill -9 the Squids of `killed` members: seconds until each serves again on a new
    process and the pool is full; the lowest ready count meanwhile."""
    folder = base / "local-proxies" / INSTALLATION

    def pid(proxy_id: str) -> int:
        return int(json.loads((folder / proxy_id / "managed.json").read_text())["pid"])

    victims = sorted(await members.ready())[:killed]
    pids = {v: pid(v) for v in victims}
    members.start()
    killed_at = time.time()
    for p in pids.values():
        os.killpg(p, signal.SIGKILL)

    async def served_again() -> bool:
        last_ok = await _last_ok(client, victims)
        fresh = all(last_ok[v] > killed_at and pid(v) != pids[v] for v in victims)
        return fresh and await _full(members, size)

    took = await wait("the killed members serving again", served_again, 60)
    await members.stop()
    return took, members.lowest


async def _delete(stack: Stack, members: Members, size: int, killed: int) -> tuple[float, int]:
    """Delete `killed` members through the API: seconds until the pool replaced them and
    is full; the lowest ready count meanwhile."""
    victims = sorted(await members.ready())[:killed]
    members.start()
    t0 = time.monotonic()
    auth = {"Authorization": f"Bearer {stack.admin_token}"}
    async with httpx.AsyncClient(base_url=stack.api_url, headers=auth, timeout=30) as http:
        for v in victims:
            (await http.delete(f"/v1/proxies/{v}")).raise_for_status()

    async def replaced() -> bool:
        return not set(victims) & await members.live() and await _full(members, size)

    await wait("the deleted members replaced", replaced, 60)
    took = time.monotonic() - t0
    await members.stop()
    return took, members.lowest


async def _recycle(members: Members, spec: PoolSpec, size: int) -> float:
    """Once every member is RECYCLE_AGE old, declare that max_age (all are due at once):
    seconds until none of them is left and the pool is full (members.lowest: the lowest
    ready count meanwhile)."""

    async def all_old() -> bool:
        born = [float(r[CREATED] or 0) for r in (await members.rows()).values()]
        return time.time() - max(born) >= RECYCLE_AGE

    await wait(f"every member {RECYCLE_AGE:g} s old", all_old, RECYCLE_AGE + 10)
    originals = await members.live()
    members.start()
    t0 = time.monotonic()
    await members.store.apply(POOL, msgspec.structs.replace(spec, max_age=RECYCLE_AGE), Owner.API)

    async def recycled() -> bool:
        return not originals & await members.live() and await _full(members, size)

    await wait("every member recycled", recycled, 300)
    took = time.monotonic() - t0
    await members.stop()
    return took


async def _full(members: Members, size: int) -> bool:
    return len(await members.ready()) >= size


async def _last_ok(client: aioredis.Redis, ids: list[str]) -> dict[str, float]:
    """Each proxy's last good probe (health writes it)."""
    async with client.pipeline(transaction=False) as pipe:
        for i in ids:
            pipe.hget(f"pf:proxy:{i}", "last_ok_at")
        got = await pipe.execute()
    return {i: float(v or 0) for i, v in zip(ids, got, strict=True)}


def _back(what: str, took: float, notes: str) -> Figure:
    return Figure(
        what=what,
        value=round(took, 2),
        unit="s",
        target="<= 10 s",
        met=took <= BACK_TARGET,
        notes=notes,
    )
