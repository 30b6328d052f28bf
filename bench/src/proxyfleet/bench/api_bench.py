"""The API benchmarks: baselines, grant, grant -> release, fleet size, RSS, double grants.

One API process (one worker, cooldown 0 so a released proxy is grantable again at once),
one wrk at 64 connections, all in the same run: the ratios against the baselines hold on a
noisy machine where absolute numbers do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from proxyfleet.bench import api_figures as af
from proxyfleet.bench.apiserver import PROVIDER, ZONE, ApiProcess, start_api
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.fleet import Audit, audit_leases, release_all, seed_ready
from proxyfleet.bench.wrkparse import WrkResult
from proxyfleet.bench.wrkrun import Load, run_wrk
from proxyfleet.common.store import connect_redis

CONNECTIONS = 64
GRANT_BODY = '{"holder":"wrk"}'


@dataclass(frozen=True, slots=True)
class Sizes:
    seconds: float
    warmup: float
    small_fleet: int
    large_fleet: int

    @classmethod
    def of(cls, env: BenchEnv) -> Sizes:
        if env.quick:
            return cls(seconds=2, warmup=1, small_fleet=100, large_fleet=20_000)
        return cls(seconds=10, warmup=2, small_fleet=100, large_fleet=100_000)


@dataclass
class ApiRuns:
    """What the runs measured, for api_figures to turn into figures."""

    sizes: Sizes
    json: WrkResult | None = None
    evalsha: WrkResult | None = None
    evalsha_after: WrkResult | None = None
    """The EVALSHA baseline again, after the lease runs: the ratios use the mean of both."""
    cycle_small: WrkResult | None = None
    cycle_large: WrkResult | None = None
    grant: WrkResult | None = None
    audit: Audit | None = None
    rss_idle_mb: float = 0.0
    rss_load_mb: float = 0.0
    seed_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


async def _load(
    env: BenchEnv,
    api: ApiProcess,
    script: str,
    path: str,
    seconds: float,
    method: str = "GET",
    body: str = "",
) -> WrkResult:
    load = Load(
        script=script,
        url=api.url + path,
        token=api.token,
        seconds=seconds,
        connections=CONNECTIONS,
        method=method,
        body=body,
    )
    result, raw = await run_wrk(load, env.base_dir)
    name = path.strip("/").replace("/", "-") or "root"
    (env.base_dir / f"wrk-{script}-{name}-{time.monotonic_ns()}.txt").write_text(raw)
    return result


async def _measure(env: BenchEnv, api: ApiProcess, runs: ApiRuns) -> None:
    s = runs.sizes
    redis = connect_redis(env.redis_url)
    try:
        await redis.flushdb()
        await asyncio.sleep(1.0)
        runs.rss_idle_mb = api.rss_mb()
        await _load(env, api, "static", "/bench/json", s.warmup)
        runs.json = await _load(env, api, "static", "/bench/json", s.seconds)
        runs.evalsha = await _load(env, api, "static", "/bench/evalsha", s.seconds, method="POST")

        await redis.flushdb()
        now = time.time()
        await seed_ready(redis, count=s.small_fleet, now=now, provider=PROVIDER, zone=ZONE)
        await _load(env, api, "cycle", "/v1/leases", s.warmup)
        await release_all(redis)  # a load stops mid-cycle: free what it still held
        runs.cycle_small = await _load(env, api, "cycle", "/v1/leases", s.seconds)
        await release_all(redis)

        t0 = time.perf_counter()
        await seed_ready(
            redis,
            count=s.large_fleet - s.small_fleet,
            start=s.small_fleet,
            now=now,
            provider=PROVIDER,
            zone=ZONE,
        )
        runs.seed_seconds = time.perf_counter() - t0
        runs.cycle_large = await _load(env, api, "cycle", "/v1/leases", s.seconds)
        await release_all(redis)

        sampler = asyncio.create_task(api.sample_rss())
        try:
            runs.grant = await _load(
                env, api, "static", "/v1/leases", s.seconds, method="POST", body=GRANT_BODY
            )
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
        runs.rss_load_mb = api.peak_rss_kb / 1024
        runs.evalsha_after = await _load(
            env, api, "static", "/bench/evalsha", s.seconds, method="POST"
        )
        await asyncio.sleep(0.5)  # let the last releases land before the audit
        runs.audit = await audit_leases(redis)
    finally:
        await redis.aclose()


async def run(env: BenchEnv) -> list[Figure]:
    """Every API figure of issue 3 (the lease half)."""
    runs = ApiRuns(sizes=Sizes.of(env))
    api = await start_api(env, cooldown=0.0)
    try:
        await _measure(env, api, runs)
    finally:
        api.stop()
    return af.figures(runs)
