"""Redis behind Sentinel for the fault suite: a primary, two replicas, three Sentinels
(two replicas: after a failover the new primary still has one to confirm writes, as
tests/common/test_failover_grants.py explains), and a plain client that follows the
primary the Sentinels name."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.sentinel

from proxyfleet.devstack.sentinel import SentinelGroup, start_sentinel_group


def start_two_replica_group(data_dir: Path) -> SentinelGroup:
    return start_sentinel_group(data_dir, replicas=2)


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
