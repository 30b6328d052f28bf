"""A real three-server NATS cluster per test (tools/devstack nats_cluster), and the API
served in this loop with every server's URL, declaring its streams with three replicas."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from tests.api.helpers import ADMIN, CLIENT, Api, api_settings, providers_config, serve

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.devstack.nats_cluster import NatsCluster, start_nats_cluster

REPLICAS = 3

ClusterApi = Callable[..., Awaitable[Api]]
"""cluster_api(nats_url=the cluster's URLs, **ApiSettings overrides) -> a running Api."""


@pytest.fixture
def nats_cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    """Three servers, formed (JetStream has a meta leader); each test breaks its own."""
    cluster = start_nats_cluster(tmp_path / "nats")
    yield cluster
    cluster.stop()


@pytest.fixture
async def cluster_api(
    redis_client: aioredis.Redis,
    redis_url: str,
    nats_cluster: NatsCluster,
) -> AsyncIterator[ClusterApi]:
    """Start apps on a clean Redis and the cluster (or the `nats_url` given), with
    `stream_replicas` 3 (with the default of 1 a start would scale the cluster's streams
    down to one copy)."""
    closers: list[Callable[[], Awaitable[None]]] = []

    async def start(nats_url: str = nats_cluster.url, **overrides: Any) -> Api:
        clock = ManualClock()
        settings = api_settings(redis_url, nats_url, **overrides)
        common = dataclasses.replace(settings.common, stream_replicas=REPLICAS)
        settings = dataclasses.replace(settings, common=common)
        app = create_app(settings, AppDeps(providers=providers_config(), clock=clock))
        url, stop = await serve(app)
        admin, client, anon, other = (
            httpx.AsyncClient(base_url=url, headers=h, timeout=10)
            for h in (
                {"Authorization": f"Bearer {ADMIN}"},
                {"Authorization": f"Bearer {CLIENT}"},
                {},
                {},
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
