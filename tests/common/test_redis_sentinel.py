"""Redis through Sentinel, against a real primary, replica and three Sentinels: the store's
clients (redis-py's pool and the ScriptMux) reach the primary by a redis+sentinel:// URL
and follow it through a failover; a master Sentinel does not know is a clear outage."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import MasterNotFoundError
from tests.common.test_start_outage import (
    BIN,
    CONFIG,
    _argv,
    _readyz,
    _run_while_unreachable,
)

from proxyfleet.common.core.errors import ConfigError, StoreUnavailable
from proxyfleet.common.host.connect import redis_reachable
from proxyfleet.common.store import LuaScript, ScriptMux, connect_redis
from proxyfleet.devstack.sentinel import (
    SentinelGroup,
    port_of,
    start_sentinel,
    start_sentinel_group,
)
from proxyfleet.devstack.servers import free_port, start_redis

FOLLOWS_WITHIN = 15.0
"""Seconds from a failover until writes reach the new primary (Sentinel takes a few)."""
INCR = LuaScript("return redis.call('INCR', KEYS[1])")


@pytest.fixture(scope="module")
def sentinel_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelGroup]:
    group = start_sentinel_group(tmp_path_factory.mktemp("sentinel"))
    yield group
    group.stop()


def _value_at(port: int, key: str) -> str | None:
    with redis.Redis(port=port, decode_responses=True) as direct:
        value = direct.get(key)
    return None if value is None else str(value)


async def _until_demoted(old: int, group: SentinelGroup) -> int:
    """The new primary's port, once Sentinel names it and the old one is a replica."""
    deadline = time.monotonic() + FOLLOWS_WITHIN
    while True:
        new = group.primary_port()
        with redis.Redis(port=old, decode_responses=True) as direct:
            role = direct.info("replication")["role"]
        if new != old and role == "slave":
            return new
        assert time.monotonic() < deadline, f"no failover within {FOLLOWS_WITHIN} s"
        await asyncio.sleep(0.1)


async def _until_it_writes(write: Callable[[], Awaitable[object]]) -> float:
    """Seconds until `write` succeeds again (bounded by FOLLOWS_WITHIN)."""
    started = time.monotonic()
    while True:
        try:
            await write()
        except (StoreUnavailable, redis.RedisError, OSError):
            if time.monotonic() - started > FOLLOWS_WITHIN:
                raise
            await asyncio.sleep(0.1)  # a poll: no event says "failover done" to a client
            continue
        return time.monotonic() - started


async def test_writes_reach_the_primary_and_follow_a_failover(
    sentinel_group: SentinelGroup,
) -> None:
    client = connect_redis(sentinel_group.url)
    mux = ScriptMux.from_client(client)
    try:
        before = sentinel_group.primary_port()
        await client.set("sentinel:plain", "before")
        assert await mux.run(INCR, ["sentinel:mux"], []) == 1
        assert _value_at(before, "sentinel:plain") == "before"

        with redis.Redis(port=sentinel_group.sentinel_ports[0]) as sentinel:
            sentinel.execute_command("SENTINEL", "FAILOVER", sentinel_group.master)
        after = await _until_demoted(before, sentinel_group)

        # The old primary stays up as a replica: writes there are refused (READONLY) and
        # both clients go back to Sentinel for the new primary.
        await _until_it_writes(lambda: client.set("sentinel:plain", "after"))
        await _until_it_writes(lambda: mux.run(INCR, ["sentinel:mux"], []))
        assert sentinel_group.primary_port() == after
        assert _value_at(after, "sentinel:plain") == "after"
        assert int(_value_at(after, "sentinel:mux") or 0) >= 2
    finally:
        await mux.aclose()
        await client.aclose()


async def test_a_killed_primary_is_replaced(tmp_path: Path) -> None:
    group = start_sentinel_group(tmp_path / "group", master="pf-killed")
    client = connect_redis(group.url)
    mux = ScriptMux.from_client(client)
    try:
        await client.set("k", "v")
        await mux.run(INCR, ["n"], [])
        primary = next(s for s in group.redis if port_of(s) == group.primary_port())
        os.kill(primary.process.pid, signal.SIGKILL)
        primary.process.wait()

        took = await _until_it_writes(lambda: client.set("k", "after"))
        await _until_it_writes(lambda: mux.run(INCR, ["n"], []))
        assert group.primary_port() != port_of(primary)
        assert await client.get("k") == "after"
        assert took < FOLLOWS_WITHIN
    finally:
        await mux.aclose()
        await client.aclose()
        group.stop()


async def test_an_unknown_master_names_the_master_and_the_sentinels(
    sentinel_group: SentinelGroup,
) -> None:
    ports = sentinel_group.sentinel_ports
    url = f"redis+sentinel://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}/no-such-master"
    client = connect_redis(url)
    try:
        with pytest.raises(MasterNotFoundError) as caught:
            await client.ping()
        said = str(caught.value)
        assert "'no-such-master'" in said
        assert f"no master by that name at 127.0.0.1:{ports[0]}, 127.0.0.1:{ports[1]}" in said
        with pytest.raises(StoreUnavailable, match="no-such-master"):
            await ScriptMux.from_client(client).command("PING")
    finally:
        await client.aclose()


async def test_no_sentinel_reachable_names_each_one_tried() -> None:
    url = "redis+sentinel://127.0.0.1:1,127.0.0.1:2/pf-primary"  # nothing listens there
    client = connect_redis(url)
    try:
        with pytest.raises(MasterNotFoundError) as caught:
            await client.ping()
        said = str(caught.value)
        assert "unreachable: 127.0.0.1:1 (" in said
        assert "127.0.0.1:2 (" in said
    finally:
        await client.aclose()


async def test_the_start_keeps_trying_an_unknown_master(sentinel_group: SentinelGroup) -> None:
    """The start's wait for Redis treats it as an outage: retried with backoff."""
    ports = sentinel_group.sentinel_ports
    url = f"redis+sentinel://127.0.0.1:{ports[0]}/no-such-master"
    client: aioredis.Redis = connect_redis(url)
    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.0):  # the first retry comes after 0.5 s
                await redis_reachable("test", url, client)
    finally:
        await client.aclose()


async def test_the_sentinel_password_is_sent_and_a_wrong_one_is_a_config_error(
    sentinel_group: SentinelGroup, tmp_path: Path
) -> None:
    guarded = start_sentinel(
        tmp_path, sentinel_group.master, sentinel_group.primary_port(), "requirepass s3cret\n"
    )
    try:
        base = f"redis+sentinel://{guarded.url.removeprefix('redis://')}/{sentinel_group.master}"
        wrong, right = (
            connect_redis(f"{base}?sentinel_password=wrong"),
            connect_redis(f"{base}?sentinel_password=s3cret"),
        )
        try:
            with pytest.raises(ConfigError, match=sentinel_group.master) as caught:
                await redis_reachable("test", f"{base}?sentinel_password=wrong", wrong)
            assert "=wrong" not in str(caught.value)
            assert "refused:" in str(caught.value)
            await redis_reachable("test", base, right)
            assert await right.set("sentinel:auth", "ok")
        finally:
            await wrong.aclose()
            await right.aclose()
    finally:
        guarded.stop()


def test_a_service_on_an_unknown_master_is_not_ready_and_says_why(
    tmp_path: Path, sentinel_group: SentinelGroup, nats_url: str
) -> None:
    """A whole service (gc) started on the URL: /readyz 503, one line per attempt naming
    the master and the Sentinel, no traceback, a clean stop."""
    port = sentinel_group.sentinel_ports[0]
    url = f"redis+sentinel://127.0.0.1:{port}/no-such-master"
    code, output = _run_while_unreachable(tmp_path, "gc", nats_url, url, signal.SIGTERM)
    assert code == 0, output
    assert "Traceback" not in output, output
    assert f"'no-such-master' via Sentinel 127.0.0.1:{port}" in output, output
    assert f"no master by that name at 127.0.0.1:{port}" in output, output


def test_a_malformed_sentinel_url_stops_the_start_with_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    env["PROXYFLEET_REDIS_URL"] = "redis+sentinel://:hunter2@127.0.0.1:26379"
    done = subprocess.run(
        [str(BIN / "proxyfleet-gc"), "--providers-config", str(tmp_path / "none.yaml")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--redis-url: a Sentinel URL names the master" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


def test_a_service_on_the_sentinel_url_becomes_ready(
    tmp_path: Path, sentinel_group: SentinelGroup, nats_url: str
) -> None:
    """The whole path: the setting, the start's wait for Redis, the readiness check."""
    config = tmp_path / "providers.yaml"
    config.write_text(CONFIG.replace("STATE", str(tmp_path / "state")))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    env |= {"PROXYFLEET_NATS_URL": nats_url, "PROXYFLEET_REDIS_URL": sentinel_group.url}
    log = tmp_path / "api.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            _argv("api", port, config), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 30
        while (status := _readyz(port)) != 200:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"/readyz {status}: {log.read_text()}"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_mux_on_a_demoted_primary_reconnects_to_the_new_one(tmp_path: Path) -> None:
    """Sentinel kills the demoted primary's clients; a demotion without it (REPLICAOF by
    hand, some managed services) leaves the connection up and refusing writes (READONLY):
    the mux drops it, and its next call goes where `locate` now says."""
    old, new = start_redis(tmp_path / "old"), start_redis(tmp_path / "new")
    where = [port_of(old)]

    async def locate() -> tuple[str, int]:
        return "127.0.0.1", where[0]

    mux = ScriptMux("127.0.0.1", 1, locate=locate)
    try:
        assert await mux.run(INCR, ["n"], []) == 1
        with redis.Redis(port=port_of(old)) as direct:
            direct.execute_command("REPLICAOF", "127.0.0.1", str(port_of(new)))
        where[0] = port_of(new)
        with pytest.raises(StoreUnavailable, match="READONLY"):
            await mux.run(INCR, ["n"], [])
        assert await mux.run(INCR, ["n"], []) == 1  # the new primary's own count
        assert _value_at(port_of(new), "n") == "1"
    finally:
        await mux.aclose()
        old.stop()
        new.stop()
