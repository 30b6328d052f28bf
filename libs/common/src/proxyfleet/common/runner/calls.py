"""Provider calls, timed by provider, operation and result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.observability.metrics import PROVIDER_CALL_SECONDS

T = TypeVar("T")


async def timed_call(provider: str, op: str, call: Awaitable[T]) -> T:
    """Await one provider call and record its latency with result ok, temporary, permanent,
    cancelled or error (an adapter that broke the port's contract)."""
    started = time.perf_counter()
    result = "error"
    try:
        value = await call
        result = "ok"
        return value
    except TemporaryProviderError:
        result = "temporary"
        raise
    except PermanentProviderError:
        result = "permanent"
        raise
    except asyncio.CancelledError:
        result = "cancelled"
        raise
    finally:
        PROVIDER_CALL_SECONDS.labels(provider, op, result).observe(time.perf_counter() - started)
