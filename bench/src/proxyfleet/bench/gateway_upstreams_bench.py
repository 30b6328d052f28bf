"""The gateway's tunnel set-up through each kind of upstream, in one run against one
gateway (issue 23): HTTP upstreams (Squid, the baseline), SOCKS5 ones (microsocks with
username/password) and HTTPS ones (stunnel's TLS in front of the same Squids, the
certificate verified against --upstream-ca-bundle). A new lease per CONNECT (cooldown
0); the client picks the kind by zone in its proxy username. The kinds take turns, so
drifting machine load touches each alike.

What differs between the rows is the upstream's work as well as the gateway's: microsocks
runs a thread per connection and answers in three round trips (greeting, credentials,
CONNECT), stunnel adds a TLS handshake per tunnel on both ends. CPU per tunnel of the
gateway and of the upstreams is in the notes."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import msgspec
import redis.asyncio as aioredis

from proxyfleet.bench import cpu_ledger
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.gateway_bench import TOKEN, _start_gateway, _start_target, _stop_gateways
from proxyfleet.bench.health_fleet import SquidPool, fleet_proxies, seed, start_squids
from proxyfleet.bench.tunnel_load import Endpoint, connect_rate
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.common.wire.models import Proxy, Scheme
from proxyfleet.devstack.servers import free_port, wait_tcp
from proxyfleet.devstack.target import make_tls_material

MICROSOCKS = "/usr/bin/microsocks"
STUNNEL = "/usr/bin/stunnel4"
UPSTREAMS = 2
"""Processes per kind (Squids, microsocks, stunnels)."""
ROUNDS = 3
KINDS = {"http": "bench-http", "socks5": "bench-socks", "https": "bench-https"}
"""Kind -> the zone its proxies are registered in."""


def _start(argv: list[str], log: Path, port: int) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out, start_new_session=True)
    wait_tcp("127.0.0.1", port, timeout=15)
    return proc


def _microsocks(base: Path, user: str, password: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    argv = [MICROSOCKS, "-i", "127.0.0.1", "-p", str(port), "-u", user, "-P", password]
    return _start(argv, base / f"microsocks-{port}.log", port), port


def _stunnel(base: Path, squid_port: int, tls: Path) -> tuple[subprocess.Popen[bytes], int]:
    """stunnel's TLS on a free port in front of the Squid on `squid_port`."""
    port = free_port()
    conf = base / f"stunnel-{port}.conf"
    conf.write_text(
        f"foreground = yes\npid =\n[squid]\naccept = 127.0.0.1:{port}\n"
        f"connect = 127.0.0.1:{squid_port}\ncert = {tls}/cert.pem\nkey = {tls}/key.pem\n"
    )
    return _start([STUNNEL, str(conf)], base / f"stunnel-{port}.log", port), port


def _registered(proxies: list[Proxy], zone: str, scheme: Scheme, **where: object) -> list[Proxy]:
    return [
        msgspec.structs.replace(p, id=f"{zone}-{p.id}", zone=zone, scheme=scheme, **where)
        for p in proxies
    ]


def _upstreams(
    base: Path, pool: SquidPool, http: list[Proxy], tls: Path
) -> tuple[list[subprocess.Popen[bytes]], list[Proxy]]:
    """A microsocks and a stunnel (TLS in front of it) per Squid; the registry entries
    of each kind, as many as `http` (the Squids' own, registered as they are)."""
    procs: list[subprocess.Popen[bytes]] = []
    out = _registered(http, KINDS["http"], Scheme.HTTP)
    for i, squid in enumerate(pool.squids):
        user, password = f"s{secrets.token_hex(4)}", secrets.token_urlsafe(12)
        socks, socks_port = _microsocks(base, user, password)
        tunnel, tls_port = _stunnel(base, squid.port, tls)
        procs += [socks, tunnel]
        mine = http[i :: len(pool.squids)]
        out += _registered(
            mine, KINDS["socks5"], Scheme.SOCKS5, port=socks_port, username=user, password=password
        )
        out += _registered(mine, KINDS["https"], Scheme.HTTPS, port=tls_port)
    return procs, out


class _Turns:
    """Each kind's rates and CPU per tunnel over the turns."""

    def __init__(self) -> None:
        self.rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.refused = dict.fromkeys(KINDS, 0)
        self.done = dict.fromkeys(KINDS, 0)
        self.cpu: dict[str, dict[str, float]] = {kind: {} for kind in KINDS}

    async def take(
        self, kind: str, ends: list[Endpoint], authority: str, workers: int, seconds: float,
        trees: dict[str, list[int]],
    ) -> None:  # fmt: skip
        before = cpu_ledger.snapshot(trees)
        rate, refused, done = await connect_rate(ends, authority, workers, seconds)
        spent = cpu_ledger.per_operation(before, cpu_ledger.snapshot(trees), done)
        self.rates[kind].append(rate)
        self.refused[kind] += refused
        self.done[kind] += done
        for part, us in spent.items():
            self.cpu[kind][part] = self.cpu[kind].get(part, 0.0) + us / ROUNDS

    def figure(self, kind: str, what: str, common: str) -> Figure:
        rates, http = self.rates[kind], self.rates["http"]
        mean, baseline = sum(rates) / len(rates), sum(http) / len(http)
        return Figure(
            what, round(mean, 1), "tunnels/s", baseline=round(baseline, 1),
            ratio=round(mean / baseline, 3),
            notes=f"{common}; {self.refused[kind]} of {self.done[kind] + self.refused[kind]} "
            f"refused (HTTP: {self.refused['http']}); CPU per tunnel (us): "
            f"{_ledger(self.cpu[kind])}, through HTTP upstreams: {_ledger(self.cpu['http'])}",
            extra={"turn_min": round(min(rates), 1), "turn_max": round(max(rates), 1)},
        )  # fmt: skip


async def run(env: BenchEnv) -> list[Figure]:
    missing = [binary for binary in (MICROSOCKS, STUNNEL) if not shutil.which(binary)]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not found: `make system-packages` installs it")
    seconds, workers = (1.0, 16) if env.quick else (4.0, 32)
    base = env.base_dir / "gw-upstreams"
    base.mkdir(parents=True, exist_ok=True)
    ca = str(make_tls_material(base / "tls", reuse=False).ca)
    sink, sink_port = _start_target("tcp_sink")
    pool: SquidPool | None = None
    others: list[subprocess.Popen[bytes]] = []
    gateways: list[subprocess.Popen[bytes]] = []
    redis: aioredis.Redis = connect_redis(env.redis_url)
    turns = _Turns()
    try:
        await redis.flushdb()
        pool = start_squids(base / "squids", UPSTREAMS, 1, [sink_port])
        others, proxies = _upstreams(base, pool, fleet_proxies(pool, 2 * workers), base / "tls")
        await seed(ProxyRegistry(redis, SystemClock()), proxies)
        port = free_port()
        zones = ", ".join(KINDS.values())
        gateways = _start_gateway(env, port, 1, zones, "--upstream-ca-bundle", ca)
        ends = {kind: [Endpoint(port, f"bench-zone-{zone}", TOKEN)] for kind, zone in KINDS.items()}
        authority = f"127.0.0.1:{sink_port}"  # tunnels to a bare TCP endpoint
        for kind in KINDS:  # warm every path (auth helper caches, TLS)
            await connect_rate(ends[kind], authority, 4, 0.3)
        trees = {
            "gateway": [g.pid for g in gateways],
            "upstreams": [*pool.pids(), *(p.pid for p in others)],
        }
        for _ in range(ROUNDS):
            for kind in KINDS:
                await turns.take(kind, ends[kind], authority, workers, seconds, trees)
        load = os.getloadavg()[0]
    finally:
        await _stop_gateways(gateways)
        for proc in others:
            proc.kill()
            proc.wait(10)
        if pool is not None:
            pool.stop()
        sink.terminate()
        sink.wait(10)
        await redis.aclose()
    common = (
        f"{workers} connections in a loop, {ROUNDS} turns of {seconds:g} s per kind; "
        f"{UPSTREAMS} upstream processes per kind; tunnels to a bare TCP endpoint; "
        f"one gateway process; load average {load:.1f} at the end"
    )
    return [
        turns.figure("socks5", "gateway tunnel set-up via SOCKS5 upstreams (vs HTTP)", common),
        turns.figure("https", "gateway tunnel set-up via HTTPS upstreams (vs HTTP)", common),
    ]


def _ledger(cpu: dict[str, float]) -> str:
    return ", ".join(f"{part} {us:.0f}" for part, us in cpu.items() if round(us))
