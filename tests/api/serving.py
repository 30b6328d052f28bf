"""Serving the API in this event loop: one app (serve), or apps on demand with a client per
scope, all stopped at the end (ApiStarter, behind the start_api and cluster_api fixtures)."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import redis.asyncio as aioredis
import uvicorn
from litestar import Litestar
from tests.api.helpers import ADMIN, CLIENT, OTHER_CLIENT, Api, api_settings, providers_config

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.api.feed.stream import event_streams_of
from proxyfleet.api.http.head import with_head
from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.devstack.servers import free_port


async def serve(app: Litestar) -> tuple[str, Callable[[], Awaitable[None]]]:
    """Serve `app` with uvicorn on a free port in this loop, as HttpServer does (HEAD
    included); returns (url, stop)."""
    port = free_port()
    config = uvicorn.Config(
        with_head(app),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 10
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn stopped before it started")
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start in 10 s")
        await asyncio.sleep(0.01)

    async def stop() -> None:
        event_streams_of(app.state).close()  # as the service's HttpServer does
        server.should_exit = True
        await task

    return f"http://127.0.0.1:{port}", stop


_TLS = ssl.create_default_context()
"""One TLS context for every test client: each client's own would load the CA bundle again
(about 27 ms, four clients an app); they speak plain HTTP to loopback anyway."""


@dataclass
class ApiStarter:
    """Starts apps on this Redis and NATS, each with its own ManualClock and a client per
    scope; `aclose` stops them all, last first. Called with settings overrides,
    or `providers` (another config than PROVIDERS_YAML)."""

    redis_client: aioredis.Redis
    redis_url: str
    nats_url: str
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def __call__(
        self,
        providers: ProvidersConfig | None = None,
        **overrides: Any,
    ) -> Api:
        clock = ManualClock()
        settings = api_settings(self.redis_url, self.nats_url, **overrides)
        app = create_app(settings, AppDeps(providers=providers or providers_config(), clock=clock))
        url, stop = await serve(app)
        scopes = (ADMIN, CLIENT, None, OTHER_CLIENT)
        admin, client, anon, other = (
            httpx.AsyncClient(base_url=url, timeout=10, headers=_bearer(t), verify=_TLS)
            for t in scopes
        )

        async def close() -> None:
            for c in (admin, client, anon, other):
                await c.aclose()
            await stop()

        self._closers.append(close)
        registry = ProxyRegistry(self.redis_client, clock)
        return Api(url, app, clock, registry, admin, client, anon, other)

    async def aclose(self) -> None:
        for close in reversed(self._closers):
            await close()


def _bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}
