"""A Redis primary, one replica and three Sentinels on free loopback ports: what the tests
of Redis through Sentinel (and failovers) run against."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from proxyfleet.devstack.servers import (
    Server,
    free_port,
    redis_server_binary,
    start_redis,
    wait_tcp,
)

DOWN_AFTER_MS = 1000
"""How long a primary may not answer before a Sentinel thinks it down (the default is 30 s)."""
READY_WITHIN = 20.0
"""Seconds for the replica to sync and the Sentinels to find each other."""


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1].split("/", 1)[0])


@dataclass
class SentinelGroup:
    master: str
    """The name the Sentinels monitor the primary under."""
    redis: list[Server]
    """The primary first, then the replica (as started: a failover swaps their roles)."""
    sentinels: list[Server] = field(default_factory=list)

    @property
    def sentinel_ports(self) -> list[int]:
        return [port_of(s) for s in self.sentinels]

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{self.master}/0"

    def primary_port(self) -> int:
        """The primary's port as the first Sentinel that answers names it."""
        for port in self.sentinel_ports:
            try:
                with redis.Redis(port=port, socket_timeout=1, decode_responses=True) as s:
                    _, primary = s.execute_command(
                        "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master
                    )
                    return int(primary)
            except redis.RedisError:
                continue
        raise RuntimeError(f"no Sentinel names a primary for {self.master}")

    def stop(self) -> None:
        for server in [*self.sentinels, *self.redis]:
            server.stop()


SYNC_AT_ONCE = ["--repl-diskless-sync-delay", "0"]
"""A primary sends a replica its data at once (Redis waits 5 s for more replicas)."""


def start_sentinel_group(
    data_dir: Path, master: str = "pf-primary", *, replicas: int = 1
) -> SentinelGroup:
    """Start the group and wait until every replica is in sync and every Sentinel sees the
    replicas and the two other Sentinels (a failover needs both). `replicas`: 2 leaves the
    promoted replica one of its own after a failover (what a replica wait needs)."""
    primary = start_redis(data_dir / "primary", options=SYNC_AT_ONCE)
    group = SentinelGroup(master, [primary])
    try:
        replica_of = ["--replicaof", "127.0.0.1", str(port_of(primary)), *SYNC_AT_ONCE]
        for n in range(replicas):
            name = "replica" if n == 0 else f"replica{n + 1}"
            group.redis.append(start_redis(data_dir / name, options=replica_of))
        for n in range(3):
            directory = data_dir / f"sentinel{n}"
            group.sentinels.append(start_sentinel(directory, master, port_of(primary)))
        _wait_ready(group)
    except BaseException:
        group.stop()
        raise
    return group


def start_sentinel(directory: Path, master: str, primary_port: int, extra: str = "") -> Server:
    """A Sentinel monitoring the primary at `primary_port` as `master`; `extra`: more lines
    of its configuration (e.g. `requirepass ...`)."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = directory / "sentinel.conf"  # Sentinel rewrites it: the state it learns
    config.write_text(
        f"port {port}\nbind 127.0.0.1\ndaemonize no\ndir {directory}\n"
        f"sentinel monitor {master} 127.0.0.1 {primary_port} 2\n"
        f"sentinel down-after-milliseconds {master} {DOWN_AFTER_MS}\n"
        f"sentinel failover-timeout {master} 10000\n"
        f"sentinel parallel-syncs {master} 1\n{extra}"
    )
    binary = shutil.which("redis-sentinel")
    argv = [binary, str(config)] if binary else [redis_server_binary(), str(config), "--sentinel"]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_tcp("127.0.0.1", port)
    except TimeoutError:
        proc.kill()
        proc.wait()
        raise
    return Server("redis-sentinel", f"redis://127.0.0.1:{port}", proc)


def _wait_ready(group: SentinelGroup) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while not _ready(group):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Sentinel group was not ready within {READY_WITHIN} s")
        time.sleep(0.1)


def _ready(group: SentinelGroup) -> bool:
    try:
        for server in group.redis[1:]:
            with redis.Redis(port=port_of(server), socket_timeout=1, decode_responses=True) as r:
                if r.info("replication").get("master_link_status") != "up":
                    return False
        for port in group.sentinel_ports:
            with redis.Redis(port=port, socket_timeout=1, decode_responses=True) as sentinel:
                state = sentinel.execute_command("SENTINEL", "MASTER", group.master)
                if isinstance(state, list):  # RESP2: a flat list of names and values
                    state = dict(zip(state[::2], state[1::2], strict=True))
                replicas = len(group.redis) - 1
                if int(state["num-slaves"]) < replicas or int(state["num-other-sentinels"]) < 2:
                    return False
    except redis.RedisError:
        return False
    return True
