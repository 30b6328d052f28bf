"""API fixtures: the app served by a real uvicorn in this event loop (against the real
Redis and NATS of tests/conftest.py), HTTP clients per scope, NATS recorders."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from tests.api.helpers import (
    Api,
    ApiFactory,
    Recorder,
)
from tests.api.serving import ApiStarter


@pytest.fixture
async def start_api(
    redis_client: aioredis.Redis, redis_url: str, nats_url: str
) -> AsyncIterator[ApiFactory]:
    """Start apps (tests.api.helpers.ApiStarter) on a clean Redis."""
    starter = ApiStarter(redis_client, redis_url, nats_url)
    yield starter
    await starter.aclose()


@pytest.fixture
async def api(start_api: ApiFactory) -> Api:
    return await start_api()


async def _recording(nc: NatsClient, subject: str) -> AsyncIterator[Recorder]:
    rec = Recorder()
    sub = await nc.subscribe(subject, cb=rec.on_msg)
    await nc.flush()
    yield rec
    await sub.unsubscribe()


@pytest.fixture
async def events(nc: NatsClient) -> AsyncIterator[Recorder]:
    """Every event published from now on (core subscription on proxyfleet.events.>)."""
    async for rec in _recording(nc, "proxyfleet.events.>"):
        yield rec


@pytest.fixture
async def intents(nc: NatsClient) -> AsyncIterator[Recorder]:
    """Every intent published from now on (core subscription on proxyfleet.intents.>)."""
    async for rec in _recording(nc, "proxyfleet.intents.>"):
        yield rec
