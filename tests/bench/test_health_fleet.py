"""The health benchmark's fleet: shared real Squids whose registered proxies each probe
for real (CONNECT with their own credentials, TLS to the dev target); no timing."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from proxyfleet.bench.health_fleet import (
    SquidPool,
    fleet_proxies,
    seed,
    start_microsocks,
    start_squids,
)
from proxyfleet.bench.health_proc import Target, cpu_seconds, rss_mb, start_target
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Scheme
from proxyfleet.health.probe import FailureKind, parse_target
from proxyfleet.health.prober import OK, Prober, make_ssl_context


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    # Squid runs as user `proxy` when we are root: its folder must be traversable
    path = Path(tempfile.mkdtemp(prefix="pf-bench-health-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def target(base: Path) -> Iterator[Target]:
    server = start_target(base / "tls")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pool(base: Path, target: Target) -> Iterator[SquidPool]:
    squids = start_squids(base / "squids", 2, 2, [target.port])
    yield squids
    squids.stop()


def test_proxies_spread_over_every_squid_and_user(pool: SquidPool) -> None:
    proxies = fleet_proxies(pool, 10)
    assert len({p.id for p in proxies}) == 10
    assert {p.port for p in proxies} == {s.port for s in pool.squids}
    users = {(s.port, u.username, u.password) for s in pool.squids for u in s.users}
    assert {(p.port, p.username, p.password) for p in proxies} == users
    assert all(p.host == "127.0.0.1" for p in proxies)


async def test_seeded_proxies_are_due_and_probe_for_real(
    pool: SquidPool, target: Target, redis_client: aioredis.Redis
) -> None:
    registry = ProxyRegistry(redis_client, SystemClock())
    proxies = fleet_proxies(pool, 4)
    await seed(registry, proxies)
    claimed = await registry.claim_probes(60.0, 10)
    assert sorted(p.id for p in claimed) == sorted(p.id for p in proxies)
    assert {p.phase for p in claimed} == {Phase.READY}
    prober = Prober(
        parse_target(target.url),
        timeout=5,
        clock=SystemClock(),
        ssl_context=make_ssl_context(target.ca_file),
    )
    for proxy in claimed:
        outcome = await prober.probe(proxy)
        assert outcome.kind == OK, outcome.result.error
    wrong = await prober.probe(msgspec.structs.replace(claimed[0], password="not-it"))
    assert wrong.kind == FailureKind.AUTH  # the shared Squid checks each proxy's credentials


async def test_a_microsocks_fleet_probes_for_real_over_socks5(base: Path, target: Target) -> None:
    pool = start_microsocks(base / "microsocks", 2)
    try:
        proxies = fleet_proxies(pool, 4)
        assert {p.scheme for p in proxies} == {Scheme.SOCKS5}
        assert {p.port for p in proxies} == {s.port for s in pool.squids}
        prober = Prober(
            parse_target(target.url),
            timeout=5,
            clock=SystemClock(),
            ssl_context=make_ssl_context(target.ca_file),
        )
        for proxy in proxies:
            outcome = await prober.probe(proxy)
            assert outcome.kind == OK, outcome.result.error
        wrong = await prober.probe(msgspec.structs.replace(proxies[0], password="not-it"))
        assert wrong.kind == FailureKind.AUTH
    finally:
        pool.stop()


def test_proc_readers(target: Target) -> None:
    assert rss_mb(target.proc.pid) > 1
    assert cpu_seconds(target.proc.pid) >= 0
    assert rss_mb(2**22 + 1) == 0.0  # no such process
