"""The pool operator's fixtures: the fake API server with the ProxyPool CRD installed, the
real client on it, the pools store on a clean Redis (real time: the operator is a process),
and operator processes stopped at teardown."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from kubernetes import client
from tests.k8s.fake_kube import FakeKube
from tests.pool_operator.harness import OperatorFactory, Pools

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.store import PoolStore, ProxyRegistry
from proxyfleet.pool_operator import crd

NAMESPACE = "team-a"


@pytest.fixture
def fake_api() -> Iterator[FakeKube]:
    """A fake API server with the ProxyPool CRD (no pod runs: no target needed)."""
    made = FakeKube().start()
    try:
        with client.ApiClient(made.configuration()) as api:
            ext: object = client.ApiextensionsV1Api(api)
            ext.create_custom_resource_definition(crd.crd())  # type: ignore[attr-defined]
        yield made
    finally:
        made.close()


@pytest.fixture
def api_client(fake_api: FakeKube) -> Iterator[client.ApiClient]:
    with client.ApiClient(fake_api.configuration()) as made:
        yield made


@pytest.fixture
def pools(api_client: client.ApiClient) -> Pools:
    return Pools(api_client, NAMESPACE)


@pytest.fixture
def clock() -> Clock:
    """Real time: the operator process stamps with it too."""
    return SystemClock()


@pytest.fixture
def store(redis_client: aioredis.Redis, clock: Clock) -> PoolStore:
    return PoolStore(redis_client, clock)


@pytest.fixture
def registry(redis_client: aioredis.Redis, clock: Clock) -> ProxyRegistry:
    return ProxyRegistry(redis_client, clock)


@pytest.fixture
async def operators(
    fake_api: FakeKube, redis_url: str, redis_client: aioredis.Redis, tmp_path: Path
) -> AsyncIterator[OperatorFactory]:
    """Operator processes on the fake (namespace team-a by its kubeconfig) and the test's
    clean Redis (`redis_client` flushed it first)."""
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig", namespace=NAMESPACE)
    factory = OperatorFactory(kubeconfig, redis_url, tmp_path)
    try:
        yield factory
    finally:
        factory.stop_all()
