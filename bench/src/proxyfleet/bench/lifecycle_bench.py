"""Lifecycle benchmarks: create 100 local proxies in one request and watch them become ready.

What runs: the whole system as separate processes (proxyfleet.devstack.stack: api,
provisioner-local, health, gc and the HTTPS target) on this run's NATS and Redis; every
proxy is a real Squid started by the local provisioner and made ready by a real probe.
A plain NATS subscriber on proxyfleet.events.> times every event; the RSS of each service
is read from /proc idle and, every RSS_EVERY seconds, under the load.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import nats

from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.health_proc import rss_mb
from proxyfleet.bench.lifecycle_events import EventLog, Seen, percentile
from proxyfleet.common.store import connect_redis
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import stop_local_proxies
from proxyfleet.devstack.stack import Stack

SERVICES = ("health", "provisioner", "gc")
"""Services whose RSS this module reports (the API's is the API benchmarks')."""
RSS_EVERY = 0.2
IDLE_SETTLE = 3.0
"""Seconds the stack runs with nothing to do before its idle RSS is read."""
ALL_READY_TARGET = 20.0
INTENT_READY_P50_TARGET = 1.0
EVENT_P99_TARGET_MS = 50.0


@dataclass
class Peaks:
    """Peak RSS of each watched process, sampled until stopped."""

    pids: dict[str, int]
    peak: dict[str, float]
    running: bool = True

    async def sample(self) -> None:
        while self.running:
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak.get(name, 0.0), rss_mb(pid))
            await asyncio.sleep(RSS_EVERY)


async def run(env: BenchEnv) -> list[Figure]:
    count, singles = (10, 3) if env.quick else (100, 10)
    base = env.base_dir / "lifecycle"
    base.mkdir(mode=0o711, parents=True, exist_ok=True)
    base.chmod(0o711)  # local proxies are Squids running as user `proxy`
    redis = connect_redis(env.redis_url)
    try:
        await redis.flushdb()
    finally:
        await redis.aclose()
    stack = Stack(_options(env, base))
    try:
        await asyncio.to_thread(stack.start)
        return await _measure(env, stack, count, singles)
    finally:
        await asyncio.to_thread(stack.stop)
        # the Redis is not the stack's own, so stop() leaves the proxies for adoption
        stop_local_proxies(base / "local-proxies")


def _options(env: BenchEnv, base: Path) -> StackOptions:
    return StackOptions.on_free_ports(
        base_dir=base,
        nats_url=env.nats_url,
        redis_url=env.redis_url,
        boot_timeout=60.0,
        gc_min_age=600.0,  # nothing here is an orphan: GC only runs, it never deletes
        echo=None,
        log_level="warning",
        installation_id="bench",
    )


async def _measure(env: BenchEnv, stack: Stack, count: int, singles: int) -> list[Figure]:
    pids = {name: stack.processes[name].pid for name in SERVICES}
    nc = await nats.connect(env.nats_url, name="proxyfleet-bench-events")
    try:
        log = EventLog()
        await log.subscribe(nc)
        await asyncio.sleep(IDLE_SETTLE)
        idle = {name: rss_mb(pid) for name, pid in pids.items()}
        peaks = Peaks(pids, dict(idle))
        sampler = asyncio.create_task(peaks.sample())
        try:
            sent = time.time()
            ids = await _create(stack, count)
            ends = await log.wait_settled(ids, within=90.0)
            await asyncio.sleep(1.0)  # late events and the RSS after the burst
        finally:
            peaks.running = False
            await sampler
        alone = []
        for _ in range(singles):  # one at a time: the pipeline's latency, no queue
            alone += await _create(stack, 1)
            await log.wait_settled(alone[-1:], within=30.0)
    finally:
        await nc.close()
    return [
        _all_ready(ends, ids, sent),
        _intent_to_ready(log, alone, f"{len(alone)} proxies created one at a time"),
        _intent_to_ready(log, ids, f"under the create-{count} burst", target=""),
        _event_delay(log, ids),
        *(_rss(name, idle[name], peaks.peak[name], count) for name in SERVICES),
    ]


async def _create(stack: Stack, count: int) -> list[str]:
    async with httpx.AsyncClient(base_url=stack.api_url, timeout=60) as http:
        response = await http.post(
            "/v1/proxies",
            json={"provider": "local", "count": count},
            headers={"Authorization": f"Bearer {stack.admin_token}"},
        )
    response.raise_for_status()
    return [item["id"] for item in response.json()["items"]]


def _all_ready(ends: dict[str, Seen], ids: list[str], sent: float) -> Figure:
    ready = [s for s in ends.values() if s.event.type == "proxy.ready"]
    last = max((s.received for s in ready), default=sent)
    took = last - sent
    return Figure(
        what=f"create {len(ids)} local proxies in one request -> all ready",
        value=round(took, 2),
        unit="s",
        target="<= 20 s",
        met=len(ready) == len(ids) and took <= ALL_READY_TARGET,
        notes=(
            "POST /v1/proxies count=N through the real API, provisioner-local (a Squid per "
            "proxy) and health (a real CONNECT + TLS probe); until the last proxy.ready "
            "reached a NATS subscriber"
        ),
        extra={"ready": float(len(ready)), "failed": float(len(ends) - len(ready))},
    )


def _intent_to_ready(log: EventLog, ids: list[str], how: str, target: str = "<= 1 s") -> Figure:
    pending = log.first_of(ids, ("proxy.pending",))
    ready = log.first_of(ids, ("proxy.ready",))
    waits = [
        ready[i].event.time - pending[i].event.time for i in ids if i in pending and i in ready
    ]
    p50 = percentile(waits, 50) if waits else float("nan")
    return Figure(
        what=f"intent published -> proxy ready (local provider), p50, {how}",
        value=round(p50, 3),
        unit="s",
        target=target or "reported",
        met=(bool(waits) and p50 <= INTENT_READY_P50_TARGET) if target else None,
        notes=(
            "per proxy: proxy.ready event time - proxy.pending event time (the API publishes "
            "the create intent and proxy.pending together); the provisioner starts a Squid, "
            "health claims the booting proxy within its 0.2 s tick and probes it"
        ),
        extra=_spread(waits) if waits else {},
    )


def _event_delay(log: EventLog, ids: list[str]) -> Figure:
    delays = [s.delay * 1000 for s in log.of(ids)]
    p99 = percentile(delays, 99) if delays else float("nan")
    return Figure(
        what="lifecycle event published -> seen by a NATS subscriber, p99",
        value=round(p99, 2),
        unit="ms",
        target="<= 50 ms",
        met=bool(delays) and p99 <= EVENT_P99_TARGET_MS,
        notes=(
            "every proxy.* event of the burst (pending, provisioning, booting, ready): "
            "receive time on a plain core-NATS subscriber - event.time"
        ),
        extra=_spread(delays) | {"events": float(len(delays))},
    )


def _spread(values: list[float]) -> dict[str, float]:
    spread = {f"p{q}": round(percentile(values, q), 3) for q in (50, 90, 99)}
    return spread | {"max": round(max(values), 3)}


def _rss(name: str, idle: float, peak: float, count: int) -> Figure:
    return Figure(
        what=f"RSS of the {name} service, idle -> under create-{count}",
        value=round(peak, 1),
        unit="MB",
        target="reported",
        notes=f"VmRSS: {idle:.1f} MB idle, {peak:.1f} MB peak while {count} proxies came up",
        extra={"idle_mb": round(idle, 1), "peak_mb": round(peak, 1)},
    )
