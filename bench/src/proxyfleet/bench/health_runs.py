"""One measured run of a real `proxyfleet-health` process over a seeded fleet.

The fleet is registered with every proxy due at once; the worker then probes as fast as it
can (a "pass"), idles until the proxies are due again one interval later, and makes the
next pass. Counting comes from the worker's own /metrics (proxyfleet_probes_total), read
every POLL seconds, so the measuring costs the machine next to nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from proxyfleet.bench import health_fleet
from proxyfleet.bench.health_fleet import SquidPool
from proxyfleet.bench.health_proc import (
    HealthProcess,
    Target,
    cpu_seconds,
    rss_mb,
    start_health,
)
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry, connect_redis

POLL = 0.1
"""Seconds between two reads of the worker's /metrics."""


@dataclass(frozen=True, slots=True)
class RunSpec:
    proxies: int
    interval: float
    passes: int
    loop: str = "uvloop"
    tls_resume_for: float = 60.0
    timeout: float = 5.0

    def how(self) -> str:
        """The worker's loop and TLS settings, in words."""
        tls = (
            f"TLS sessions resumed, a full handshake every {self.tls_resume_for:g} s"
            if self.tls_resume_for
            else "a full TLS handshake on every probe"
        )
        return f"{self.loop} loop, {tls}"

    def args(self, target: Target) -> list[str]:
        return [
            *("--target", target.url, "--ca-file", target.ca_file),
            *("--interval", str(self.interval)),
            *("--timeout", str(min(self.timeout, self.interval / 2))),
            *("--loop", self.loop, "--tls-resume-for", str(self.tls_resume_for)),
            *("--stats-interval", "5"),
        ]


@dataclass
class Sample:
    at: float
    ok: float
    failed: float
    cpu: float
    rss: float
    target_cpu: float = 0.0
    squids_cpu: float = 0.0

    @property
    def done(self) -> float:
        return self.ok + self.failed


@dataclass
class RunResult:
    spec: RunSpec
    samples: list[Sample] = field(default_factory=list)
    seed_seconds: float = 0.0
    failures: dict[str, float] = field(default_factory=dict)
    start_rss: float = 0.0

    def pass_seconds(self, n: int) -> float:
        """Time from the first probe of pass n (1-based) to its last one."""
        size = self.spec.proxies
        start = self._first_at(lambda s: s.done > (n - 1) * size)
        end = self._first_at(lambda s: s.done >= n * size)
        # the first sample past the start is up to one poll late: count half a poll back
        return max(0.0, end - start + POLL / 2)

    def rate(self) -> float:
        """Probes a second over the middle 80% of the first pass (start-up excluded)."""
        size = self.spec.proxies
        lo = next(s for s in self.samples if s.done >= 0.1 * size)
        hi = next(s for s in self.samples if s.done >= 0.9 * size)
        return (hi.done - lo.done) / max(hi.at - lo.at, 1e-9)

    def cpu_per_probe_us(self, of: Callable[[Sample], float] = lambda s: s.cpu) -> float:
        """CPU used per probe over the middle of the first pass: by default the worker's
        (all its work: claims, probes, Redis writes, NATS publishes, metrics)."""
        size = self.spec.proxies
        lo = next(s for s in self.samples if s.done >= 0.1 * size)
        hi = next(s for s in self.samples if s.done >= 0.9 * size)
        return (of(hi) - of(lo)) / max(hi.done - lo.done, 1) * 1e6

    def max_rss(self) -> float:
        return max((s.rss for s in self.samples), default=0.0)

    @property
    def failed(self) -> float:
        return sum(self.failures.values())

    def _first_at(self, pred: Callable[[Sample], bool]) -> float:
        for s in self.samples:
            if pred(s):
                return s.at
        raise RuntimeError("the run ended before the fleet was probed")


async def measure(
    spec: RunSpec,
    *,
    base: Path,
    nats_url: str,
    redis_url: str,
    target: Target,
    pool: SquidPool,
    deadline: float = 120.0,
) -> RunResult:
    """Seed `spec.proxies` proxies (all due now), run one worker for `spec.passes` passes."""
    result = RunResult(spec)
    redis = connect_redis(redis_url)
    try:
        await redis.flushdb()
        registry = ProxyRegistry(redis, SystemClock())
        started = time.monotonic()
        await health_fleet.seed(registry, health_fleet.fleet_proxies(pool, spec.proxies))
        result.seed_seconds = time.monotonic() - started
    finally:
        await redis.aclose()
    config = base / "providers.yaml"
    config.write_text(
        "providers:\n  - name: bench\n    type: local\n    zones: [bench-a]\n"
        f"    local:\n      state_dir: {base / 'unused-state'}\n"
    )
    health = start_health(
        nats_url=nats_url,
        redis_url=redis_url,
        providers_config=config,
        log=base / "health.log",
        args=spec.args(target),
    )
    try:
        result.start_rss = rss_mb(health.pid)
        await _watch(health, result, deadline, target.proc.pid, pool.pids())
    finally:
        health.stop()
    return result


async def _watch(
    health: HealthProcess, result: RunResult, deadline: float, target: int, squids: list[int]
) -> None:
    want = result.spec.passes * result.spec.proxies
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        counts = await asyncio.to_thread(health.probes)
        ok = counts.get("ok", 0.0)
        failures = {k: v for k, v in counts.items() if k != "ok" and v}
        result.failures = failures
        sample = Sample(
            at=time.monotonic(),
            ok=ok,
            failed=sum(failures.values()),
            cpu=cpu_seconds(health.pid),
            rss=rss_mb(health.pid),
            target_cpu=cpu_seconds(target),
            squids_cpu=sum(cpu_seconds(pid) for pid in squids),
        )
        result.samples.append(sample)
        if sample.done >= want:
            return
        await asyncio.sleep(POLL)
    raise TimeoutError(
        f"the worker probed {result.samples[-1].done:.0f} of {want} in {deadline:.0f}s"
    )
