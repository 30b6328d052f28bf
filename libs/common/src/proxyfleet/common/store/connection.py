"""The Redis connection of a process: one server by URL, or the primary Sentinel names.

Through Sentinel, every new connection asks the Sentinels where the primary is (redis-py's
SentinelConnectionPool); a connection to a primary that became a replica (READONLY) or
went away is dropped, and the next one goes to the new primary."""

from __future__ import annotations

from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from proxyfleet.common.core.redis_url import (
    DirectRedis,
    SentinelRedis,
    parse_redis_url,
    sentinel_list,
)

HEALTH_CHECK_INTERVAL = 30
"""Seconds a pooled connection may sit idle before it is PINGed on its next use."""
SENTINEL_TIMEOUT = 2.0
"""Seconds for a Sentinel to accept a connection and answer: one that does not is skipped."""


def connect_redis(url: str) -> aioredis.Redis:
    """One connection pool per process; replies decoded as str. Connects lazily: the first
    command (the start's PING) says whether Redis, or the Sentinels, can be reached."""
    target = parse_redis_url(url)
    if isinstance(target, DirectRedis):
        return aioredis.Redis.from_url(
            url, decode_responses=True, health_check_interval=HEALTH_CHECK_INTERVAL
        )
    return _through_sentinel(target)


def _through_sentinel(target: SentinelRedis) -> aioredis.Redis:
    sentinel = _NamingSentinel(
        target,
        sentinel_kwargs={
            "username": target.sentinel_username,
            "password": target.sentinel_password,
            "socket_timeout": SENTINEL_TIMEOUT,
            "socket_connect_timeout": SENTINEL_TIMEOUT,
            "decode_responses": True,
            # One try per Sentinel: discovery is retried as a whole (each new connection
            # asks again), so a dead Sentinel costs one refused connect, not a backoff.
            "retry": Retry(NoBackoff(), 0),
        },
    )
    client = sentinel.master_for(
        target.master,
        redis_class=SentinelClient,
        db=target.db,
        username=target.username,
        password=target.password,
        decode_responses=True,
        health_check_interval=HEALTH_CHECK_INTERVAL,
    )
    assert isinstance(client, SentinelClient)
    client.sentinel_manager = sentinel
    return client


class SentinelClient(aioredis.Redis):
    """The primary's client; closing it closes its connections to the Sentinels too."""

    sentinel_manager: Sentinel | None = None

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        if self.sentinel_manager is not None:
            await self.sentinel_manager.aclose()


class _NamingSentinel(Sentinel):
    """redis-py's Sentinel, with a discovery error that says what went wrong: no Sentinel
    answered, none knows the master, or the master is down; naming the Sentinels tried.
    Every one of them is an outage (MasterNotFoundError, a ConnectionError) that the start
    tries again with backoff; a Sentinel password every Sentinel refuses is an
    AuthenticationError (a configuration error)."""

    def __init__(self, target: SentinelRedis, **kwargs: Any) -> None:
        super().__init__(list(target.sentinels), **kwargs)  # type: ignore[no-untyped-call]
        self._target = target

    async def discover_master(self, service_name: str) -> Any:
        unreachable: list[str] = []
        refused: list[str] = []
        unknown: list[str] = []
        down: list[str] = []
        not_sentinel: list[str] = []
        for index, (sentinel, address) in enumerate(
            zip(self.sentinels, self._addresses(), strict=True)
        ):
            try:
                masters = cast(dict[str, dict[str, Any]], await sentinel.sentinel_masters())
            except AuthenticationError as exc:
                refused.append(f"{address} ({exc})")
                continue
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                unreachable.append(f"{address} ({exc or type(exc).__name__})")
                continue
            except ResponseError:  # e.g. a Redis server's port given for a Sentinel's
                not_sentinel.append(address)
                continue
            state = masters.get(service_name)
            if state is None:
                unknown.append(address)
            elif not self.check_master_state(state, service_name):
                down.append(address)
            else:  # this Sentinel is asked first next time, as redis-py does
                self.sentinels[0], self.sentinels[index] = sentinel, self.sentinels[0]
                return state["ip"], state["port"]
        if refused and not (unknown or down or unreachable or not_sentinel):
            raise AuthenticationError(f"{self._what()}: refused: {'; '.join(refused)}")
        said = [
            f"{what} {', '.join(where)}"
            for what, where in (
                ("no master by that name at", unknown),
                ("master down (sdown/odown) per", down),
                ("unreachable:", unreachable),
                ("not a Sentinel (SENTINEL MASTERS refused):", not_sentinel),
                ("refused the Sentinel credentials:", refused),
            )
            if where
        ]
        raise MasterNotFoundError(f"{self._what()}: no primary found; {'; '.join(said)}")

    def _what(self) -> str:
        return self._target.describe()

    def _addresses(self) -> list[str]:
        """Each Sentinel client's address, in the current order (discovery reorders them)."""
        out = []
        for sentinel in self.sentinels:
            kw = sentinel.connection_pool.connection_kwargs
            out.append(sentinel_list(((str(kw["host"]), int(kw["port"])),)))
        return out
