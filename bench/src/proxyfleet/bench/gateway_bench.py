"""The gateway beside direct Squid use, in one run (issue 13): tunnel set-up rate (a new
lease per CONNECT, cooldown 0) against CONNECTs straight to the same Squids, one tunnel's
bulk download against the same download direct, the p50 latency the gateway adds to a
CONNECT, and the gateway's memory per idle tunnel (1,000 of them).

The gateway runs as its own process (`proxyfleet-gateway`, uvloop; several sharing one
port with PROXYFLEET_BENCH_GATEWAYS), as deployed; the load is generated here with raw
asyncio sockets, the same code for both paths, tunnelling to a bare TCP endpoint (the
target's own cost stays out of the comparison); downloads are made by curl from a local
HTTPS server."""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis

from proxyfleet.bench import cpu_ledger
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.health_fleet import PROVIDER, SquidPool, fleet_proxies, seed, start_squids
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.common.wire.models import Proxy
from proxyfleet.devstack.servers import free_port, wait_tcp

TOKEN = "bench-gateway-token-" + secrets.token_hex(8)
"""The gateway's client token in this run (its proxy password)."""
SQUIDS = 4
IDLE_TUNNELS = 1_000
GATEWAYS = int(os.environ.get("PROXYFLEET_BENCH_GATEWAYS", "1"))
"""Gateway processes sharing the port (SO_REUSEPORT; the direct path has four Squid
processes). One by default; PROXYFLEET_BENCH_GATEWAYS=N runs N, as one per core would be
deployed (on the 2-core bench machine two measured no better than one: 0.17-0.63 against
0.16-0.44 of the direct rate, within what other load moved it)."""


@dataclass(frozen=True)
class Endpoint:
    """Where a CONNECT goes and the credentials it carries."""

    port: int
    username: str
    password: str

    def connect(self, authority: str) -> bytes:
        creds = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return (
            f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
            f"Proxy-Authorization: Basic {creds}\r\n\r\n"
        ).encode()

    def url(self) -> str:
        return f"http://{self.username}:{self.password}@127.0.0.1:{self.port}"


async def _one_connect(ep: Endpoint, authority: str) -> tuple[bool, float]:
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", ep.port)
    try:
        writer.write(ep.connect(authority))
        head = await reader.readuntil(b"\r\n\r\n")
        return head.startswith(b"HTTP/1.1 200"), time.perf_counter() - started
    finally:
        writer.transport.abort()


async def connect_rate(
    endpoints: list[Endpoint], authority: str, workers: int, seconds: float
) -> tuple[float, int, int]:
    """(tunnels set up per second, refused, set up) with `workers` in a loop each."""
    done, refused = 0, 0
    deadline = time.monotonic() + seconds

    async def worker(i: int) -> None:
        nonlocal done, refused
        n = i
        while time.monotonic() < deadline:
            ok, _ = await _one_connect(endpoints[n % len(endpoints)], authority)
            n += workers
            if ok:
                done += 1
            else:
                refused += 1

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(workers)))
    return done / (time.monotonic() - started), refused, done


async def p50_sequential(ep: list[Endpoint], authority: str, count: int) -> float:
    took = []
    for i in range(count):
        ok, t = await _one_connect(ep[i % len(ep)], authority)
        if ok:
            took.append(t)
    return statistics.median(took) * 1000


def download_speed(proxy_url: str, url: str, ca: str) -> float:
    """Bytes per second of one download through the proxy (curl's own measure)."""
    out = subprocess.run(
        ["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", "--cacert", ca,
         "-x", proxy_url, url],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return float(out.stdout)


def _rss_kib(pids: list[int]) -> int:
    lines = [ln for pid in pids for ln in Path(f"/proc/{pid}/status").read_text().splitlines()]
    return sum(int(line.split()[1]) for line in lines if line.startswith("VmRSS:"))


async def idle_tunnels(
    gw: Endpoint, authority: str, count: int, pids: list[int]
) -> tuple[float, int]:
    """(KiB of gateway RSS per idle tunnel, tunnels opened)."""
    before = _rss_kib(pids)
    open_: list[asyncio.StreamWriter] = []
    try:
        for i in range(0, count, 50):

            async def one() -> asyncio.StreamWriter | None:
                reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
                writer.write(gw.connect(authority))
                head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"HTTP/1.1 200"):
                    return writer
                writer.transport.abort()
                return None

            batch = await asyncio.gather(*(one() for _ in range(min(50, count - i))))
            open_ += [w for w in batch if w is not None]
        await asyncio.sleep(1.0)
        after = _rss_kib(pids)
    finally:
        for w in open_:
            w.transport.abort()
        await asyncio.sleep(0.1)  # asyncio closes an aborted socket on a later loop turn
    return (after - before) / max(1, len(open_)), len(open_)


# ---- processes ----------------------------------------------------------------------------


def _start_target(module: str, *args: str) -> tuple[subprocess.Popen[str], int]:
    """A target server process of this package and the port it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", f"proxyfleet.bench.{module}", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, int(line.rsplit(" ", 1)[1])


def _start_gateway(
    env: BenchEnv, port: int, processes: int, zones: str = "bench-a", *extra: str
) -> list[subprocess.Popen[bytes]]:
    config = env.base_dir / "gateway-providers.yaml"
    config.write_text(
        f"providers:\n  - name: {PROVIDER}\n    type: local\n"
        f"    zones: [{zones}]\n    local: {{}}\n"
    )
    binary = Path(sys.executable).parent / "proxyfleet-gateway"
    envs = dict(os.environ)
    envs.update(
        PROXYFLEET_NATS_URL=env.nats_url,
        PROXYFLEET_REDIS_URL=env.redis_url,
        PROXYFLEET_PROVIDERS_CONFIG=str(config),
        PROXYFLEET_GATEWAY_CLIENT_TOKENS=f"bench:{TOKEN}",
        PROXYFLEET_LOG_LEVEL="warning",
    )
    log = open(env.base_dir / "logs" / "gateway.log", "ab")  # noqa: SIM115  (the child's)
    argv = [str(binary), "--port", str(port), "--cooldown", "0", "--max-probe-age", "0",
            "--metrics-port", "0", "--reuse-port", *extra]  # fmt: skip
    procs = [subprocess.Popen(argv, env=envs, stdout=log, stderr=log) for _ in range(processes)]
    log.close()
    wait_tcp("127.0.0.1", port, timeout=30)
    time.sleep(1.0)  # every process listening, not only the first (wait_tcp sees one)
    return procs


async def _stop_gateways(gateways: list[subprocess.Popen[bytes]]) -> None:
    for g in gateways:
        g.terminate()
    for g in gateways:  # a stopping gateway drains its connections (--drain-seconds 20)
        try:
            await asyncio.to_thread(g.wait, 30)
        except subprocess.TimeoutExpired:
            g.kill()
            g.wait()


async def run(env: BenchEnv) -> list[Figure]:
    quick = env.quick
    size = (32 if quick else 512) * 1024 * 1024
    seconds = 3.0 if quick else 10.0
    workers = 16 if quick else 32
    idle = 200 if quick else IDLE_TUNNELS
    bulk, bulk_port = _start_target(
        "bulk_target", "--dir", str(env.base_dir / "bulk-tls"), "--size", str(size)
    )
    sink, sink_port = _start_target("tcp_sink")
    pool: SquidPool | None = None
    gateways: list[subprocess.Popen[bytes]] = []
    redis: aioredis.Redis = connect_redis(env.redis_url)
    try:
        await redis.flushdb()
        pool = start_squids(env.base_dir / "gw-squids", SQUIDS, 4, [bulk_port, sink_port])
        proxies = fleet_proxies(pool, idle + 2 * workers, prefix="pg")
        await seed(ProxyRegistry(redis, SystemClock()), proxies)
        direct = [Endpoint(p.port, p.username, p.password) for p in _distinct(proxies)]
        gw = Endpoint(free_port(), "bench", TOKEN)
        gateways = _start_gateway(env, gw.port, GATEWAYS)
        pids = [g.pid for g in gateways]
        authority = f"127.0.0.1:{sink_port}"  # tunnels to a bare TCP endpoint
        for ep in (direct, [gw]):  # warm both paths (auth helper caches, imports)
            await connect_rate(ep, authority, 4, 0.5)
        trees = {
            "gateway": pids, "squids": pool.pids(), "redis": [env.redis_pid],
            "nats": [env.nats_pid], "target": [sink.pid],
        }  # fmt: skip
        d_load = os.getloadavg()[0]
        before = cpu_ledger.snapshot(trees)
        d_rate, _, d_done = await connect_rate(direct, authority, workers, seconds)
        between = cpu_ledger.snapshot(trees)
        g_rate, g_refused, g_done = await connect_rate([gw], authority, workers, seconds)
        after = cpu_ledger.snapshot(trees)
        d_cpu = cpu_ledger.per_operation(before, between, d_done)
        g_cpu = cpu_ledger.per_operation(between, after, g_done)
        g_load = os.getloadavg()[0]
        d_p50 = await p50_sequential(direct, authority, 200)
        g_p50 = await p50_sequential([gw], authority, 200)
        url, ca = f"https://127.0.0.1:{bulk_port}/big", str(env.base_dir / "bulk-tls" / "ca.pem")
        d_speed = await asyncio.to_thread(download_speed, direct[0].url(), url, ca)
        g_speed = await asyncio.to_thread(download_speed, gw.url(), url, ca)
        per_tunnel, opened = await idle_tunnels(gw, authority, idle, pids)
    finally:
        await _stop_gateways(gateways)
        if pool is not None:
            pool.stop()
        for target in (bulk, sink):
            target.terminate()
            target.wait(10)
        await redis.aclose()
    mib = 1024 * 1024
    return [
        Figure(
            "gateway tunnel set-up rate (new lease per CONNECT)", round(g_rate, 1), "tunnels/s",
            target=">= 50% of direct CONNECTs", baseline=round(d_rate, 1),
            ratio=round(g_rate / d_rate, 3), met=g_rate >= 0.5 * d_rate,
            notes=f"{workers} connections in a loop for {seconds:g} s each; {SQUIDS} Squids; "
            "tunnels to a bare TCP endpoint (tcp_sink); "
            f"{g_refused} refused; {GATEWAYS} gateway processes; CPU per tunnel (us): "
            f"{_ledger(g_cpu)}, per direct CONNECT: {_ledger(d_cpu)}; load average "
            f"{d_load:.1f} before the direct run, {g_load:.1f} after the gateway's (the rate "
            "is CPU-bound when the machine is: every process shares its cores)",
        ),
        Figure(
            "gateway bulk throughput, one tunnel", round(g_speed / mib, 1), "MiB/s",
            target=">= 70% of direct", baseline=round(d_speed / mib, 1),
            ratio=round(g_speed / d_speed, 3), met=g_speed >= 0.7 * d_speed,
            notes=f"curl, {size // mib} MiB over TLS from a local server",
        ),
        Figure(
            "gateway added p50 latency per CONNECT", round(g_p50 - d_p50, 2), "ms",
            baseline=round(d_p50, 2), notes=f"200 sequential CONNECTs each; direct p50 "
            f"{d_p50:.2f} ms, gateway p50 {g_p50:.2f} ms",
        ),
        Figure(
            "gateway memory per idle tunnel", round(per_tunnel, 1), "KiB",
            notes=f"RSS growth of the gateway processes over {opened} idle tunnels, each "
            "its own lease",
        ),
    ]  # fmt: skip


def _ledger(cpu: dict[str, float]) -> str:
    return ", ".join(f"{part} {us:.0f}" for part, us in cpu.items() if round(us))


def _distinct(proxies: list[Proxy]) -> list[Proxy]:
    """One registry entry per Squid user (the direct path's credentials)."""
    seen: dict[tuple[int, str], Proxy] = {}
    for p in proxies:
        seen.setdefault((p.port, p.username), p)
    return list(seen.values())
