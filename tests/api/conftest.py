"""API fixtures: the app served by a real uvicorn in this event loop (against the real
Redis and NATS of tests/conftest.py), HTTP clients per scope, NATS recorders."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from tests.api.helpers import (
    ADMIN,
    CLIENT,
    OTHER_CLIENT,
    Api,
    ApiFactory,
    Recorder,
    api_settings,
    providers_config,
    serve,
)

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import ProxyRegistry


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def start_api(
    redis_client: aioredis.Redis, redis_url: str, nats_url: str
) -> AsyncIterator[ApiFactory]:
    """Start apps (settings overrides as keyword arguments; `providers`: another providers
    config than helpers.PROVIDERS_YAML) on a clean Redis."""
    closers: list[Callable[[], Awaitable[None]]] = []

    async def start(providers: ProvidersConfig | None = None, **overrides: Any) -> Api:
        clock = ManualClock()
        settings = api_settings(redis_url, nats_url, **overrides)
        deps = AppDeps(providers=providers or providers_config(), clock=clock)
        app = create_app(settings, deps)
        url, stop = await serve(app)
        admin, client, anon, other = (
            httpx.AsyncClient(base_url=url, headers=h, timeout=10)
            for h in (
                {"Authorization": f"Bearer {ADMIN}"},
                {"Authorization": f"Bearer {CLIENT}"},
                {},
                {"Authorization": f"Bearer {OTHER_CLIENT}"},
            )
        )

        async def close() -> None:
            for c in (admin, client, anon, other):
                await c.aclose()
            await stop()

        closers.append(close)
        registry = ProxyRegistry(redis_client, clock)
        return Api(url, app, clock, registry, admin, client, anon, other)

    yield start
    for close in reversed(closers):
        await close()


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
