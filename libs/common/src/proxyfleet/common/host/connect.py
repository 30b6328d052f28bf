"""Reaching NATS and Redis at start: try, and on an outage wait and try again, with a
backoff, saying so once per attempt (one line: the backend, the attempt, the next delay;
no traceback). The caller stops it by cancelling (SIGTERM during the start)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from redis.exceptions import AuthenticationError

from proxyfleet.common.core.errors import ConfigError, MessagingUnavailable, StoreUnavailable
from proxyfleet.common.messaging.jetstream import connect_nats, ensure_streams, messaging_outage
from proxyfleet.common.observability.logging import get_logger, redact_value
from proxyfleet.common.observability.metrics import RETRIES
from proxyfleet.common.store.outage import OUTAGES, unavailable

T = TypeVar("T")
log = get_logger("proxyfleet.host")

FIRST_DELAY = 0.5
"""Seconds before the second attempt; each further delay doubles."""
MAX_DELAY = 15.0
"""Longest wait between attempts: a backend that comes back is used within this."""


def delay(attempt: int) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based)."""
    return float(min(MAX_DELAY, FIRST_DELAY * 2 ** min(attempt - 1, 16)))


async def keep_trying(
    service: str,
    backend: str,
    url: str,
    attempt_once: Callable[[], Awaitable[T]],
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """`attempt_once()` until it does not raise an outage (StoreUnavailable or
    MessagingUnavailable); any other error is raised at once."""
    attempt = 0
    while True:
        attempt += 1
        try:
            result = await attempt_once()
        except (StoreUnavailable, MessagingUnavailable) as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # Cancelled (stopping) while a library swallowed it: nats-py's connect
                # catches what Python 3.11's wait_for turns a cancel into.
                raise asyncio.CancelledError from exc
            wait = delay(attempt)
            RETRIES.labels(op=f"connect.{backend}").inc()
            log.warning(
                "service.backend_unreachable",
                service=service,
                backend=backend,
                url=url,  # the log processor cuts credentials out of URLs
                attempt=attempt,
                retry_in_s=wait,
                error=str(exc),
            )
            await sleep(wait)
            continue
        if attempt > 1:
            log.info("service.backend_reached", service=service, backend=backend, attempt=attempt)
        return result


async def nats_with_streams(service: str, url: str, replicas: int = 1) -> NatsClient:
    """A NATS connection (endless reconnects once made) with both streams declared, each
    with `replicas` copies."""

    async def once() -> NatsClient:
        nc = await connect_nats(url, name=f"proxyfleet-{service}")
        try:
            with messaging_outage(f"JetStream at {url}"):
                await ensure_streams(nc.jetstream(), replicas)
        except MessagingUnavailable:
            await nc.close()
            raise
        return nc

    return await keep_trying(service, "nats", url, once)


async def redis_reachable(service: str, url: str, client: aioredis.Redis) -> None:
    """Wait until Redis answers PING (refused, timing out or LOADING: try again)."""

    shown = redact_value(url)  # a ConfigError is printed as it is, not through the log

    async def once() -> None:
        try:
            await client.ping()
        except AuthenticationError as exc:  # a ConnectionError to redis-py, not an outage
            raise ConfigError(f"Redis at {shown}: {exc}") from exc
        except OUTAGES as exc:
            raise unavailable(f"Redis at {shown}: {exc}") from exc

    await keep_trying(service, "redis", url, once)
