"""A plain (blocking) Redis client for the fault suite's probes that follows the primary the
Sentinels name when the services are given a redis+sentinel:// URL."""

from __future__ import annotations

import redis
import redis.sentinel

from proxyfleet.common.core.redis_url import SentinelRedis, parse_redis_url


def sync_client(url: str, socket_timeout: float = 2) -> redis.Redis:
    """A redis-py client for `url`: redis:// as is; redis+sentinel:// the primary the
    Sentinels name (looked up again on each new connection)."""
    target = parse_redis_url(url)
    if not isinstance(target, SentinelRedis):
        return redis.Redis.from_url(url, socket_timeout=socket_timeout)
    sentinel = redis.sentinel.Sentinel(list(target.sentinels), socket_timeout=socket_timeout)  # type: ignore[no-untyped-call]
    client: redis.Redis = sentinel.master_for(  # type: ignore[no-untyped-call]
        target.master, db=target.db, socket_timeout=socket_timeout
    )
    return client
