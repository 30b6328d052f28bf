"""The gateway beside the gateway people already run and beside direct Squid use, in one
run (issues 13 and 24): tunnel set-up rate (a new lease per CONNECT, cooldown 0) against
apify's proxy-chain (a random upstream per CONNECT over the same Squids; npm, installed
into the scratch folder, the row marked missing where that fails) and against CONNECTs
straight to the same Squids; one tunnel's bulk download against the same download direct,
the p50 latency the gateway adds to a CONNECT, and the gateway's memory per idle tunnel
(1,000 of them).

The gateway runs as its own process (`proxyfleet-gateway`, uvloop; several sharing one
port with PROXYFLEET_BENCH_GATEWAYS), as deployed, and proxy-chain as its own Node
process; the load is generated here (tunnel_load: raw asyncio sockets, the same code for
every path, the paths taking turns), tunnelling to a bare TCP endpoint (the target's own
cost stays out of the comparison); downloads are made by curl from a local HTTPS server."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import redis.asyncio as aioredis

from proxyfleet.bench import proxy_chain
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.gateway_figures import PathTotals, SetupRuns, setup_figures
from proxyfleet.bench.health_fleet import PROVIDER, SquidPool, fleet_proxies, seed, start_squids
from proxyfleet.bench.proxy_chain import Installed, Missing, ProxyChain
from proxyfleet.bench.tunnel_load import Endpoint, connect_rate, p50_sequential, take_turns
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


def _start_peer(
    installed: Installed | Missing, direct: list[Proxy], log: Path
) -> ProxyChain | Missing:
    """proxy-chain over every Squid user, or why not (the bench runs on without it)."""
    if isinstance(installed, Missing):
        return installed
    urls = [proxy_chain.upstream_url(p.host, p.port, p.username, p.password) for p in direct]
    try:
        return proxy_chain.start(installed, urls, log)
    except (OSError, RuntimeError) as exc:
        return Missing(str(exc))


async def run(env: BenchEnv) -> list[Figure]:
    quick = env.quick
    size = (32 if quick else 512) * 1024 * 1024
    rounds, seconds = (1, 3.0) if quick else (2, 5.0)  # per path and round
    workers = 16 if quick else 32
    idle = 200 if quick else IDLE_TUNNELS
    installed = await asyncio.to_thread(proxy_chain.install, env.base_dir / "proxy-chain")
    bulk, bulk_port = _start_target(
        "bulk_target", "--dir", str(env.base_dir / "bulk-tls"), "--size", str(size)
    )
    sink, sink_port = _start_target("tcp_sink")
    pool: SquidPool | None = None
    gateways: list[subprocess.Popen[bytes]] = []
    peer: ProxyChain | Missing = installed if isinstance(installed, Missing) else Missing("")
    redis: aioredis.Redis = connect_redis(env.redis_url)
    try:
        await redis.flushdb()
        pool = start_squids(env.base_dir / "gw-squids", SQUIDS, 4, [bulk_port, sink_port])
        proxies = fleet_proxies(pool, idle + 2 * workers, prefix="pg")
        await seed(ProxyRegistry(redis, SystemClock()), proxies)
        upstreams = _distinct(proxies)
        direct = [Endpoint(p.port, p.username, p.password) for p in upstreams]
        gw = Endpoint(free_port(), "bench", TOKEN)
        gateways = _start_gateway(env, gw.port, GATEWAYS)
        peer = _start_peer(installed, upstreams, env.base_dir / "logs" / "proxy-chain.log")
        pids = [g.pid for g in gateways]
        paths = {"direct": direct, "gateway": [gw]}
        if isinstance(peer, ProxyChain):  # it asks for no credentials: these are ignored
            paths = {"direct": direct, "proxy-chain": [Endpoint(peer.port, "bench", TOKEN)],
                     "gateway": [gw]}  # fmt: skip
        authority = f"127.0.0.1:{sink_port}"  # tunnels to a bare TCP endpoint
        for ends in paths.values():  # warm every path (auth helper caches, imports, V8's JIT)
            await connect_rate(ends, authority, 4, 1.0)
        trees = {
            "gateway": pids, "proxy-chain": [peer.pid] if isinstance(peer, ProxyChain) else [],
            "squids": pool.pids(), "redis": [env.redis_pid], "nats": [env.nats_pid],
            "target": [sink.pid],
        }  # fmt: skip
        load_before = os.getloadavg()[0]
        totals = await take_turns(paths, authority, workers, seconds, rounds, trees)
        setup = SetupRuns(
            gateway=totals["gateway"], direct=totals["direct"],
            peer=totals.get("proxy-chain", peer if isinstance(peer, Missing) else PathTotals()),
            peer_name=_peer_name(installed), upstreams=len(upstreams), workers=workers,
            rounds=rounds, seconds=seconds, squids=SQUIDS, gateways=GATEWAYS,
            load=(load_before, os.getloadavg()[0]),
        )  # fmt: skip
        d_p50 = await p50_sequential(direct, authority, 200)
        g_p50 = await p50_sequential([gw], authority, 200)
        url, ca = f"https://127.0.0.1:{bulk_port}/big", str(env.base_dir / "bulk-tls" / "ca.pem")
        d_speed = await asyncio.to_thread(download_speed, direct[0].url(), url, ca)
        g_speed = await asyncio.to_thread(download_speed, gw.url(), url, ca)
        per_tunnel, opened = await idle_tunnels(gw, authority, idle, pids)
    finally:
        if isinstance(peer, ProxyChain):
            peer.stop()
        await _stop_gateways(gateways)
        if pool is not None:
            pool.stop()
        for target in (bulk, sink):
            target.terminate()
            target.wait(10)
        await redis.aclose()
    mib = 1024 * 1024
    return [
        *setup_figures(setup),
        Figure(
            "gateway bulk throughput, one tunnel", round(g_speed / mib, 1), "MiB/s",
            target=">= 90% of direct", baseline=round(d_speed / mib, 1),
            ratio=round(g_speed / d_speed, 3), met=g_speed >= 0.9 * d_speed,
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


def _peer_name(installed: Installed | Missing) -> str:
    if isinstance(installed, Missing):
        return ""
    return f"proxy-chain {installed.version} on Node {installed.node_version}"


def _distinct(proxies: list[Proxy]) -> list[Proxy]:
    """One registry entry per Squid user (the direct path's credentials)."""
    seen: dict[tuple[int, str], Proxy] = {}
    for p in proxies:
        seen.setdefault((p.port, p.username), p)
    return list(seen.values())
