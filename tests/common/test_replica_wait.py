"""ScriptMux with a replica wait: a script's reply is given only once the replica holds its
writes (one WAIT per pipelined batch), and a replica that does not confirm in time makes
the call a StoreUnavailable (503), never an acknowledged write a failover could lose."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock, SystemClock
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.store import (
    GrantRequest,
    LeaseStore,
    ProxyRegistry,
    ReplicaWait,
    ScriptMux,
    Unreplicated,
)
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.devstack.servers import free_port, redis_server_binary, wait_tcp


@pytest.fixture
def replica(redis_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A replica of the test's Redis (its own process, stopped here)."""
    primary_port = redis_url.rsplit(":", 1)[1].split("/", 1)[0]
    port = free_port()
    proc = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path), "--replicaof", "127.0.0.1", primary_port],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_tcp("127.0.0.1", port)
        yield proc, f"redis://127.0.0.1:{port}/0"
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(10)
        _until_no_replica(redis_url)  # the session's Redis as other tests expect it


def _until_no_replica(redis_url: str, within: float = 10.0) -> None:
    with redis.Redis.from_url(redis_url, socket_timeout=2) as primary:
        deadline = time.monotonic() + within
        while int(primary.info("replication").get("connected_slaves", 0)) > 0:
            assert time.monotonic() < deadline, "the primary still counts the replica"
            time.sleep(0.05)
        primary.config_set("repl-diskless-sync-delay", 5)  # Redis's default


async def _in_sync(replica_client: aioredis.Redis, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while (await replica_client.info("replication")).get("master_link_status") != "up":
        assert time.monotonic() < deadline, "the replica did not sync"
        await asyncio.sleep(0.05)


@pytest.fixture
async def replica_client(
    replica: tuple[subprocess.Popen[bytes], str],
    redis_client: aioredis.Redis,
) -> AsyncIterator[aioredis.Redis]:
    # The primary would wait 5 s for more replicas before a full sync (its default).
    await redis_client.config_set("repl-diskless-sync-delay", 0)
    client = aioredis.Redis.from_url(replica[1], decode_responses=True)
    await _in_sync(client)
    yield client
    await client.aclose()


async def _ready_proxies(redis_client: aioredis.Redis, clock: ManualClock, count: int) -> None:
    registry = ProxyRegistry(redis_client, clock)
    for i in range(count):
        await make_ready(registry, make_proxy(f"pw{i}", clock))


def _store(redis_client: aioredis.Redis, mux: ScriptMux) -> LeaseStore:
    return LeaseStore(redis_client, SystemClock(), LeasePolicy(cooldown=0), mux=mux)


async def test_an_acknowledged_grant_is_already_on_the_replica(
    redis_client: aioredis.Redis, replica_client: aioredis.Redis, clock: ManualClock
) -> None:
    await _ready_proxies(redis_client, clock, 8)
    mux = ScriptMux.from_client(redis_client, ReplicaWait(1, 2.0))
    leases = _store(redis_client, mux)
    try:

        async def cycle(n: int) -> int:
            missing = 0
            for _ in range(n):
                lease = await leases.grant(GrantRequest(ttl=60, holder="w"))
                # Read from the replica right at the acknowledgement: it must hold it.
                if await replica_client.hget(f"pf:lease:{lease.id}", "state") != "active":
                    missing += 1
                await leases.release(lease.id, lease.epoch)
            return missing

        assert sum(await asyncio.gather(*(cycle(25) for _ in range(8)))) == 0
    finally:
        await mux.aclose()


async def test_a_replica_that_does_not_confirm_makes_the_write_unacknowledged(
    redis_client: aioredis.Redis,
    replica: tuple[subprocess.Popen[bytes], str],
    replica_client: aioredis.Redis,
    clock: ManualClock,
) -> None:
    await _ready_proxies(redis_client, clock, 2)
    mux = ScriptMux.from_client(redis_client, ReplicaWait(1, 0.3))
    leases = _store(redis_client, mux)
    try:
        os.kill(replica[0].pid, signal.SIGSTOP)  # alive, connected, never acknowledging
        started = time.monotonic()
        with pytest.raises(Unreplicated, match="0 of 1 Redis replicas confirmed"):
            await leases.grant(GrantRequest(ttl=60, holder="w"))
        assert 0.3 <= time.monotonic() - started < 5
        # Made on the primary all the same: the lease holds its proxy until its TTL.
        assert await redis_client.zcard("pf:leases") == 1
        os.kill(replica[0].pid, signal.SIGCONT)
        lease = await leases.grant(GrantRequest(ttl=60, holder="w"))
        assert await replica_client.hget(f"pf:lease:{lease.id}", "state") == "active"
    finally:
        await mux.aclose()


def test_the_wait_comes_from_the_common_settings() -> None:
    assert ReplicaWait.of(CommonSettings()) is None
    common = CommonSettings(redis_wait_replicas=2, redis_wait_timeout=0.05)
    assert ReplicaWait.of(common) == ReplicaWait(2, 0.05)
