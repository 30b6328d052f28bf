"""Redis behind Sentinel for the fault suite: a primary, two replicas, three Sentinels
(two replicas: after a failover the new primary still has one to confirm writes, as
tests/common/test_failover_grants.py explains), and a plain client that follows the
primary the Sentinels name."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.sentinel

from proxyfleet.devstack.sentinel import SentinelGroup, port_of, start_sentinel_group
from proxyfleet.devstack.servers import start_redis

SEEN_WITHIN = 30.0
"""Seconds for every Sentinel to learn of the second replica (from the primary's INFO)."""


def start_two_replica_group(data_dir: Path) -> SentinelGroup:
    group = start_sentinel_group(data_dir)
    try:
        replica_of = ["--replicaof", "127.0.0.1", str(port_of(group.redis[0]))]
        group.redis.append(start_redis(data_dir / "replica2", options=replica_of))
        for server in group.redis:  # a replica syncs at once (the default waits 5 s)
            with redis.Redis(port=port_of(server), socket_timeout=5) as admin:
                admin.config_set("repl-diskless-sync-delay", 0)
        _until_sentinels_see(group, replicas=2)
    except BaseException:
        group.stop()
        raise
    return group


def _until_sentinels_see(group: SentinelGroup, replicas: int) -> None:
    deadline = time.monotonic() + SEEN_WITHIN
    for port in group.sentinel_ports:
        with redis.Redis(port=port, socket_timeout=2, decode_responses=True) as sentinel:
            while len(sentinel.execute_command("SENTINEL", "REPLICAS", group.master)) < replicas:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the Sentinels did not see {replicas} replicas")
                time.sleep(0.1)  # Sentinel state in other processes: polled


def sync_client(url: str, socket_timeout: float = 2) -> redis.Redis:
    """A redis-py client for `url`: redis:// as is; redis+sentinel://h:p,h:p/<master>/<db>
    the primary the Sentinels name (looked up again on each new connection)."""
    if not url.startswith("redis+sentinel://"):
        return redis.Redis.from_url(url, socket_timeout=socket_timeout)
    parts = urlsplit(url)
    hosts = [(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in parts.netloc.split(",")]
    master, _, db = parts.path.strip("/").partition("/")
    sentinel = redis.sentinel.Sentinel(hosts, socket_timeout=socket_timeout)  # type: ignore[no-untyped-call]
    client: redis.Redis = sentinel.master_for(  # type: ignore[no-untyped-call]
        master, db=int(db or 0), socket_timeout=socket_timeout
    )
    return client
