"""A real three-server NATS cluster per test (tools/devstack nats_cluster), and the API
served in this loop with every server's URL, declaring its streams with three replicas."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from tests.api.helpers import Api
from tests.api.serving import ApiStarter

from proxyfleet.common.core.settings import CommonSettings
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
    starter = ApiStarter(redis_client, redis_url, nats_cluster.url)

    async def start(nats_url: str = nats_cluster.url, **overrides: Any) -> Api:
        common = CommonSettings(redis_url=redis_url, nats_url=nats_url, stream_replicas=REPLICAS)
        return await starter(common=common, **overrides)

    yield start
    await starter.aclose()
