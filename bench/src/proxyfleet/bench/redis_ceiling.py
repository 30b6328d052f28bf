"""One Redis's ceiling for grant -> release cycles, scripts only (no HTTP, no API).

N ready proxies are seeded, each with an exit address (egress_bench.seed: one in ten shares
its neighbour's), as the API's grants see them. Client *processes* (spawned, each with its
own event loop, redis client and ScriptMux) run grant -> release cycles through the
LeaseStore, as the API calls it (the lease owned by a client, released by it), for a few
rounds started together at a barrier. Per round: the cycles, Redis's own CPU
(/proc/<pid>/stat, every thread of the server), the clients' CPU, and Redis's command
statistics for the scripts (EVALSHA time, reset before the round).

The ceiling is 1 s / Redis CPU per cycle: what one Redis would do with a whole core
busy on nothing else. Each script runs on Redis's one main thread, so that core is the
limit whatever the number of API replicas.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import cast

from proxyfleet.bench.cpu_ledger import snapshot
from proxyfleet.bench.egress_bench import seed
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.store import GrantRequest, LeaseStore, ScriptMux, connect_redis
from proxyfleet.common.store.lease_terms import LeasePolicy

WORKERS = 3
"""Client processes: with 2 cores, more only steal the core Redis needs."""
CONCURRENCY = 64
"""Cycles in flight per client process (pipelined on its ScriptMux)."""
CLIENT = "bench-ceiling"
POLICY = LeasePolicy(cooldown=0.0, max_ttl=3600.0)
"""No cooldown: a released proxy is grantable at once, so the fleet never runs dry."""
WAIT = 60.0
"""Most seconds a barrier or a round's result is waited for (a dead worker: an error)."""


@dataclass(frozen=True, slots=True)
class Round:
    """What one round measured (the raw numbers; every figure is derived from them)."""

    cycles: int
    refused: int
    window: float
    """Seconds from the barrier's release to the last worker's result."""
    redis_cpu: float
    """CPU seconds of the Redis server in the window."""
    clients_cpu: float
    machine_cpu: float
    """CPU seconds the whole machine was busy (every core)."""
    script_calls: int
    script_usec: float
    """Redis's own microseconds inside the scripts (commandstats EVALSHA + EVAL)."""

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.window if self.window > 0 else 0.0

    @property
    def redis_us_per_cycle(self) -> float:
        return self.redis_cpu / self.cycles * 1e6 if self.cycles else 0.0

    @property
    def script_us_per_cycle(self) -> float:
        return self.script_usec / self.cycles if self.cycles else 0.0

    @property
    def script_us_per_call(self) -> float:
        return self.script_usec / self.script_calls if self.script_calls else 0.0

    @property
    def clients_us_per_cycle(self) -> float:
        return self.clients_cpu / self.cycles * 1e6 if self.cycles else 0.0

    @property
    def redis_busy(self) -> float:
        """Share of one core Redis used: below 1, something else (the clients, the rest of
        a shared machine) held it back."""
        return self.redis_cpu / self.window if self.window > 0 else 0.0

    @property
    def ceiling(self) -> float:
        """Cycles per second at one core of Redis CPU: 1 s / Redis CPU per cycle."""
        per_cycle = self.redis_us_per_cycle
        return 1e6 / per_cycle if per_cycle > 0 else 0.0


def script_stats(commandstats: Mapping[str, Mapping[str, float]]) -> tuple[int, float]:
    """(calls, microseconds) of the scripts in INFO commandstats: EVALSHA, plus the EVAL a
    cold script cache answers with. Their inner commands are counted again under their own
    names (cmdstat_hmget, ...): their time is already inside the script's."""
    calls, usec = 0, 0.0
    for name in ("cmdstat_evalsha", "cmdstat_eval"):
        stat = commandstats.get(name, {})
        calls += int(stat.get("calls", 0))
        usec += float(stat.get("usec", 0.0))
    return calls, usec


def median_round(rounds: list[Round]) -> Round:
    """The round of median throughput (a whole round: its figures agree with each other)."""
    if not rounds:
        raise ValueError("no rounds")
    ranked = sorted(rounds, key=lambda r: r.cycles_per_second)
    return ranked[(len(ranked) - 1) // 2]


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    redis_url: str
    rounds: int
    seconds: float
    concurrency: int


async def _cycles(store: LeaseStore, seconds: float, concurrency: int) -> tuple[int, int]:
    """Grant -> release cycles for `seconds`, `concurrency` at once: (cycles, refusals)."""
    done = refused = 0
    deadline = time.perf_counter() + seconds

    async def one_at_a_time() -> None:
        nonlocal done, refused
        while time.perf_counter() < deadline:
            try:
                lease = await store.grant(GrantRequest(ttl=60.0, holder=CLIENT, client=CLIENT))
            except Unavailable:
                refused += 1
                continue
            await store.release(lease.id, lease.epoch, owner=CLIENT, actor=CLIENT)
            done += 1

    await asyncio.gather(*(one_at_a_time() for _ in range(concurrency)))
    return done, refused


async def _drive(plan: WorkerPlan, barrier: Barrier, results: Queue[tuple[int, int]]) -> None:
    client = connect_redis(plan.redis_url)
    mux = ScriptMux.from_client(client)
    store = LeaseStore(client, SystemClock(), POLICY, mux=mux)
    try:
        await _cycles(store, 0.05, 1)  # loads the scripts before the first round
        barrier.wait(WAIT)  # ready: no round counts this process's start-up
        for _ in range(plan.rounds):
            # Blocks this loop on purpose: nothing of it runs between rounds.
            barrier.wait(WAIT)
            results.put(await _cycles(store, plan.seconds, plan.concurrency))
    finally:
        await mux.aclose()
        await client.aclose()


def client_process(plan: WorkerPlan, barrier: Barrier, results: Queue[tuple[int, int]]) -> None:
    """A client process's body (spawned: a fresh interpreter, no inherited event loop)."""
    asyncio.run(_drive(plan, barrier, results))


async def measure(env: BenchEnv, plan: WorkerPlan, workers: int) -> list[Round]:
    """Start `workers` client processes and run plan.rounds rounds of plan.seconds."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(workers + 1)
    results: Queue[tuple[int, int]] = ctx.Queue()
    procs = [
        ctx.Process(target=client_process, args=(plan, barrier, results), daemon=True)
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    pids = [p.pid for p in procs if p.pid is not None]
    client = connect_redis(env.redis_url)
    rounds: list[Round] = []
    try:
        await asyncio.to_thread(barrier.wait, WAIT)  # every client started and warm
        for _ in range(plan.rounds):
            await client.config_resetstat()
            before = snapshot({"redis": [env.redis_pid], "clients": pids})
            started = time.perf_counter()
            await asyncio.to_thread(barrier.wait, WAIT)
            got = [await asyncio.to_thread(results.get, True, WAIT) for _ in procs]
            window = time.perf_counter() - started
            after = snapshot({"redis": [env.redis_pid], "clients": pids})
            stats = cast(dict[str, dict[str, float]], await client.info("commandstats"))
            calls, usec = script_stats(stats)
            rounds.append(
                Round(
                    cycles=sum(c for c, _ in got),
                    refused=sum(r for _, r in got),
                    window=window,
                    redis_cpu=after.trees["redis"] - before.trees["redis"],
                    clients_cpu=after.trees["clients"] - before.trees["clients"],
                    machine_cpu=after.machine - before.machine,
                    script_calls=calls,
                    script_usec=usec,
                )
            )
    finally:
        await client.aclose()
        barrier.abort()  # a worker still waiting (a failed round) gets out
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
    return rounds


def figures(rounds: list[Round], proxies: int, addresses: int, plan: WorkerPlan) -> list[Figure]:
    mid = median_round(rounds)
    setup = (
        f"{WORKERS} client processes x {plan.concurrency} cycles in flight (LeaseStore over a "
        f"ScriptMux each); {proxies:,} ready proxies on {addresses:,} exit addresses; "
        f"{len(rounds)} rounds of {plan.seconds:g} s, the median round's figures"
    )
    rates = ", ".join(f"{r.cycles_per_second:,.0f}" for r in rounds)
    extra = {
        "redis_busy": mid.redis_busy,
        "redis_us_per_cycle": mid.redis_us_per_cycle,
        "script_us_per_cycle": mid.script_us_per_cycle,
        "script_us_per_call": mid.script_us_per_call,
        "clients_us_per_cycle": mid.clients_us_per_cycle,
        "machine_busy_cores": mid.machine_cpu / mid.window if mid.window else 0.0,
        "refused": float(sum(r.refused for r in rounds)),
    }
    return [
        Figure(
            what="one Redis: grant -> release cycles (scripts only)",
            value=mid.cycles_per_second,
            unit="cycles/s",
            notes=f"{setup}; rounds: {rates} cycles/s; Redis used {mid.redis_busy:.2f} of a "
            f"core, the machine {extra['machine_busy_cores']:.2f} cores, the clients "
            f"{mid.clients_us_per_cycle:.0f} us CPU per cycle",
            extra=extra,
        ),
        Figure(
            what="one Redis: Redis CPU per grant -> release cycle",
            value=mid.redis_us_per_cycle,
            unit="us",
            notes="/proc/<redis pid>/stat (every thread of the server) over the round; "
            f"commandstats: {mid.script_us_per_call:.1f} us a script call (grant or release), "
            f"{mid.script_us_per_cycle:.1f} us a cycle, timed by Redis's clock: on a machine "
            "busier than its cores it counts the time Redis waited for a core mid-script too",
            extra=extra,
        ),
        Figure(
            what="one Redis: implied ceiling (1 s / Redis CPU per cycle)",
            value=mid.ceiling,
            unit="cycles/s",
            notes="grant -> release cycles one Redis core would serve busy on nothing else "
            f"(measured with Redis at {mid.redis_busy:.2f} of a core; fuller pipelines only "
            "make a cycle cheaper)",
            extra=extra,
        ),
    ]


async def run(env: BenchEnv) -> list[Figure]:
    if not env.redis_pid:
        why = "the Redis server's pid is not known (no CPU to read)"
        return [Figure(what="one Redis: implied ceiling", value=0.0, unit="cycles/s", missing=why)]
    count, rounds, seconds = (2_000, 2, 1.0) if env.quick else (20_000, 5, 5.0)
    plan = WorkerPlan(env.redis_url, rounds, seconds, CONCURRENCY)
    client = connect_redis(env.redis_url)
    try:
        await client.flushdb()
        addresses = await seed(client, count)
        measured = await measure(env, plan, WORKERS)
        await client.flushdb()
    finally:
        await client.aclose()
    return figures(measured, count, addresses, plan)
