"""Grant throughput with exclusivity by exit address (`ip`) against none (`none`), in one run.

The fleet: N ready proxies with known exit addresses, most of them their own, some shared
by two proxies (as pods on one node or VMs behind one NAT are). Coroutines run
grant -> release cycles straight through the LeaseStore, its scripts pipelined on a
ScriptMux as the API runs them, first with every provider in `ip` mode, then in `none`,
alternating rounds so a change in the machine's load touches both. Measured at the store,
not over HTTP: there the grant script is the largest share of a grant's cost, so the
ratio is the harshest one (over HTTP the API's own work dilutes it).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import cast

import redis.asyncio as aioredis

from proxyfleet.bench.apiserver import PROVIDER, ZONE
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.fleet import seed_ready
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.domain.egress import Exclusive, network
from proxyfleet.common.store import (
    GrantRequest,
    LeaseStore,
    ProxyRegistry,
    ScriptMux,
    connect_redis,
)
from proxyfleet.common.store.egress_holds import Exclusivity
from proxyfleet.common.store.lease_terms import LeasePolicy

TARGET = 0.9
CONCURRENCY = 64
SHARED_EVERY = 10
"""One proxy in this many shares its exit address with the proxy before it."""
ROUNDS = 8
BATCH = 2_000


def address_of(index: int) -> str:
    """Distinct 10.x.y.z addresses; every SHARED_EVERY-th proxy takes its neighbour's."""
    n = index - 1 if index % SHARED_EVERY == SHARED_EVERY - 1 else index
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


async def seed(client: aioredis.Redis, count: int) -> int:
    """Ready proxies with their exit addresses set as health sets them; returns how many
    distinct addresses they leave through."""
    ids = await seed_ready(client, count=count, now=time.time(), provider=PROVIDER, zone=ZONE)
    registry = ProxyRegistry(client, SystemClock())
    for first in range(0, count, BATCH):
        updates = [
            (pid, None, {"egress_ip": address_of(i), "egress_net": network(address_of(i))})
            for i, pid in enumerate(ids[first : first + BATCH], start=first)
        ]
        await registry.update_many(updates)
    await client.xtrim("pf:outbox", maxlen=0)
    return len({address_of(i) for i in range(count)})


async def cycles_per_second(store: LeaseStore, seconds: float) -> tuple[float, int]:
    """Grant -> release cycles for `seconds`, CONCURRENCY at once: (cycles/s, refusals)."""
    done = refused = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done, refused
        while time.perf_counter() < deadline:
            try:
                lease = await store.grant(GrantRequest(ttl=60.0, holder="bench-egress"))
            except Unavailable:
                refused += 1
                continue
            await store.release(lease.id, lease.epoch)
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return done / (time.perf_counter() - started), refused


async def script_micros(client: aioredis.Redis) -> float:
    """Redis's own mean time per script call (grant and release alike) since the last
    CONFIG RESETSTAT: the scripts' cost without the client's."""
    stats = cast(dict[str, dict[str, float]], await client.info("commandstats"))
    return float(stats.get("cmdstat_evalsha", {}).get("usec_per_call", 0.0))


async def measure(client: aioredis.Redis, mux: ScriptMux, seconds: float) -> dict[str, float]:
    """Per mode, the median over ROUNDS alternating rounds of cycles/s and of the scripts'
    microseconds per call; the median ratio of the rounds; and the refusals."""
    policy = LeasePolicy(cooldown=0.0, max_ttl=3600.0)
    rates: dict[Exclusive, list[float]] = {"ip": [], "none": []}
    micros: dict[Exclusive, list[float]] = {"ip": [], "none": []}
    refused = 0
    for n in range(ROUNDS):
        # Each mode goes first every other round: neither always runs on a warmer store.
        for mode in ("ip", "none") if n % 2 == 0 else ("none", "ip"):
            modes = Exclusivity({PROVIDER: mode})
            store = LeaseStore(client, SystemClock(), policy, mux=mux, exclusivity=modes)
            await client.config_resetstat()
            rate, skipped = await cycles_per_second(store, seconds)
            rates[mode].append(rate)
            micros[mode].append(await script_micros(client))
            refused += skipped
    # The ratio of each round's pair (run back to back, so under about the same load),
    # then their median: steadier than a ratio of medians on a shared machine.
    pairs = [ip / none for ip, none in zip(rates["ip"], rates["none"], strict=True)]
    return {
        "ratio": statistics.median(pairs),
        "ip": statistics.median(rates["ip"]),
        "none": statistics.median(rates["none"]),
        "ip_script_us": statistics.median(micros["ip"]),
        "none_script_us": statistics.median(micros["none"]),
        "refused": float(refused),
    }


async def run(env: BenchEnv) -> list[Figure]:
    count, seconds = (2_000, 0.5) if env.quick else (20_000, 3.0)
    client = connect_redis(env.redis_url)
    mux = ScriptMux.from_client(client)
    try:
        await client.flushdb()
        addresses = await seed(client, count)
        got = await measure(client, mux, seconds)
        await client.flushdb()
    finally:
        await mux.aclose()
        await client.aclose()
    ratio = got["ratio"]
    return [
        Figure(
            what="grant -> release cycles with exclusivity by exit address (ip vs none)",
            value=got["ip"],
            unit="cycles/s",
            target=f">= {TARGET:g} of none",
            baseline=got["none"],
            ratio=ratio,
            met=ratio >= TARGET,
            notes=(
                f"the LeaseStore over a ScriptMux, {CONCURRENCY} coroutines, one process; "
                f"{count:,} ready proxies on {addresses:,} exit addresses (one in "
                f"{SHARED_EVERY} shares its neighbour's); {ROUNDS} rounds of {seconds:g} s "
                "per mode, alternating; the ratio is the median of each round's pair; "
                f"{int(got['refused'])} grants refused; Redis's time per script call (grant "
                f"or release): {got['ip_script_us']:.1f} us with ip, "
                f"{got['none_script_us']:.1f} us with none"
            ),
            extra={"ip_script_us": got["ip_script_us"], "none_script_us": got["none_script_us"]},
        )
    ]
