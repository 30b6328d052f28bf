"""Redis outages named where they happen: every public coroutine of a store class raises
StoreUnavailable, never redis' own ConnectionError, TimeoutError or BusyLoadingError."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from proxyfleet.common.core.errors import StoreUnavailable

RETRY_AFTER = 1.0
"""Seconds a caller is asked to wait after an outage (Redis restarting or loading)."""
OUTAGES = (RedisConnectionError, RedisTimeoutError, OSError)
"""What an outage looks like from redis-py (BusyLoadingError is a ConnectionError)."""

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


def unavailable(message: str) -> StoreUnavailable:
    """The store's one outage error (the mux raises it for a lost connection too)."""
    return StoreUnavailable(message, RETRY_AFTER)


def _translated(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:  # a plain try, not a context manager: this wraps the grant path
            return await fn(*args, **kwargs)
        except OUTAGES as exc:
            raise unavailable(f"Redis unavailable: {exc}") from exc

    return call


def translates_outages(cls: C) -> C:
    """Wrap each public `async def` of `cls` so a Redis outage leaves it as StoreUnavailable."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.iscoroutinefunction(member):
            fn: Any = member
            setattr(cls, name, _translated(fn))
    return cls
