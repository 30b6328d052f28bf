"""Redis outages named where they happen: every public coroutine of a store class raises
StoreUnavailable, never redis' own ConnectionError, TimeoutError or BusyLoadingError."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from proxyfleet.common.errors import StoreUnavailable

RETRY_AFTER = 1.0
"""Seconds a caller is asked to wait after an outage (Redis restarting or loading)."""
OUTAGES = (RedisConnectionError, RedisTimeoutError, OSError)
"""What an outage looks like from redis-py (BusyLoadingError is a ConnectionError)."""

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


@contextmanager
def store_outage() -> Iterator[None]:
    try:
        yield
    except OUTAGES as exc:
        raise StoreUnavailable(f"Redis unavailable: {exc}", RETRY_AFTER) from exc


def _translated(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:  # not store_outage(): this wraps the grant path, and a generator costs a µs
            return await fn(*args, **kwargs)
        except OUTAGES as exc:
            raise StoreUnavailable(f"Redis unavailable: {exc}", RETRY_AFTER) from exc

    return call


def translates_outages(cls: C) -> C:
    """Wrap each public `async def` of `cls` in store_outage()."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.iscoroutinefunction(member):
            fn: Any = member
            setattr(cls, name, _translated(fn))
    return cls
