"""Session fixtures: a fresh real NATS (JetStream) and Redis on free ports, or the servers
named by TEST_NATS_URL / TEST_REDIS_URL."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
import stamina

from proxyfleet.common.store import connect_redis
from proxyfleet.devstack.servers import start_nats, start_redis


@pytest.fixture(scope="session", autouse=True)
def _no_retry_backoff() -> Iterator[None]:
    """Retries stay bounded and named, but tests never sleep between attempts."""
    with stamina.set_testing(True, attempts=2):
        yield


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if url := os.environ.get("TEST_NATS_URL"):
        yield url
        return
    server = start_nats(tmp_path_factory.mktemp("nats"))
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if url := os.environ.get("TEST_REDIS_URL"):
        yield url
        return
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A client on a clean database: every test starts from an empty system of record."""
    client = connect_redis(redis_url)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path
