"""What waiting for a replica costs a grant (issue 25): grant -> release cycles through the
LeaseStore over a ScriptMux, as the API and the gateway run them, with one replica of the
run's Redis attached, without and with `--redis-wait-replicas 1` (one WAIT per pipelined
batch), alternating rounds so a change in the machine's load touches both."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import time

import redis.asyncio as aioredis

from proxyfleet.bench.apiserver import PROVIDER, ZONE
from proxyfleet.bench.egress_bench import CONCURRENCY, cycles_per_second
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.fleet import seed_ready
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import LeaseStore, ReplicaWait, ScriptMux, connect_redis
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.devstack.servers import free_port, redis_server_binary, wait_tcp

ROUNDS = 4
WAIT = ReplicaWait(1, 1.0)


def start_replica(env: BenchEnv) -> tuple[subprocess.Popen[bytes], str]:
    """A replica of the run's Redis, in memory (the bench stops it)."""
    primary = env.redis_url.rsplit(":", 1)[1].split("/", 1)[0]
    port = free_port()
    folder = env.base_dir / "replica"
    folder.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(folder), "--replicaof", "127.0.0.1", primary],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    wait_tcp("127.0.0.1", port)
    return proc, f"redis://127.0.0.1:{port}/0"


async def in_sync(replica_url: str, within: float = 30.0) -> None:
    client = aioredis.Redis.from_url(replica_url, decode_responses=True)
    try:
        deadline = time.monotonic() + within
        while (await client.info("replication")).get("master_link_status") != "up":
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica did not sync within {within:g} s")
            await asyncio.sleep(0.1)
    finally:
        await client.aclose()


async def run(env: BenchEnv) -> list[Figure]:
    count, seconds = (1_000, 0.5) if env.quick else (10_000, 3.0)
    client = connect_redis(env.redis_url)
    await client.flushdb()
    await client.config_set("repl-diskless-sync-delay", 0)
    replica, replica_url = start_replica(env)
    muxes = {"none": ScriptMux.from_client(client), "wait": ScriptMux.from_client(client, WAIT)}
    rates: dict[str, list[float]] = {"none": [], "wait": []}
    refused = 0
    try:
        await in_sync(replica_url)
        await seed_ready(client, count=count, now=time.time(), provider=PROVIDER, zone=ZONE)
        for n in range(ROUNDS):
            for mode in ("none", "wait") if n % 2 == 0 else ("wait", "none"):
                store = LeaseStore(client, SystemClock(), LeasePolicy(cooldown=0.0),
                                   mux=muxes[mode])  # fmt: skip
                rate, skipped = await cycles_per_second(store, seconds)
                rates[mode].append(rate)
                refused += skipped
        await client.flushdb()
    finally:
        for mux in muxes.values():
            await mux.aclose()
        await client.aclose()
        replica.terminate()
        replica.wait(10)
    pairs = [w / n for w, n in zip(rates["wait"], rates["none"], strict=True)]
    ratio = statistics.median(pairs)
    return [
        Figure(
            what="grant -> release cycles waiting for one replica (WAIT) vs not",
            value=round(statistics.median(rates["wait"])),
            unit="cycles/s",
            target="reported",
            baseline=round(statistics.median(rates["none"])),
            ratio=round(ratio, 3),
            notes=(
                f"the LeaseStore over a ScriptMux, {CONCURRENCY} coroutines, one process; "
                f"{count:,} ready proxies; one replica on loopback; {ROUNDS} rounds of "
                f"{seconds:g} s per mode, alternating; the ratio is the median of each "
                f"round's pair; one WAIT per pipelined batch; {refused} grants refused"
            ),
        )
    ]
