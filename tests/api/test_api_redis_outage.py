"""Redis stopped under a running API: grants, renewals and reads answer 503 with
Retry-After (never 500) and /readyz says Redis; once Redis is back the API answers again."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.api.helpers import ApiFactory, error_of, ready_proxy
from tests.faults.servers import Restartable

from proxyfleet.common.core.settings import CommonSettings


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Restartable]:
    # a server of this test's own, on a port and folder that survive its restart
    server = Restartable("redis", tmp_path / "redis", tmp_path / "redis.log", persist=False)
    server.start()
    yield server
    server.stop()


async def test_redis_stopped_under_a_running_api_is_503_with_retry_after(
    start_api: ApiFactory, nats_url: str, own_redis: Restartable
) -> None:
    api = await start_api(common=CommonSettings(redis_url=own_redis.url, nats_url=nats_url))
    api = dataclasses.replace(api, registry=api.services.backends.registry)  # its own Redis
    await ready_proxy(api, "predis1")
    await ready_proxy(api, "predis2")
    r = await api.client.post("/v1/leases", json={"ttl": 30})
    assert r.status_code == 201, r.text
    lease = r.json()

    own_redis.stop()
    for call in (
        api.client.post("/v1/leases", json={"ttl": 30}),
        api.client.post(f"/v1/leases/{lease['lease_id']}/renew", json={"epoch": 1}),
        api.client.get(f"/v1/leases/{lease['lease_id']}"),
        api.admin.get("/v1/proxies"),
        api.admin.post("/v1/proxies", json={"provider": "apitest"}),
    ):
        r = await call
        assert r.status_code == 503, r.text
        assert error_of(r) == "store_unavailable"
        assert r.headers["retry-after"] == "1"
    r = await api.anon.get("/readyz")
    assert r.status_code == 503
    assert r.json()["redis"] is False

    own_redis.start()  # empty: no persistence here
    deadline = time.monotonic() + 10
    while (r := await api.client.post("/v1/leases", json={"ttl": 30})).status_code != 503 or (
        error_of(r) == "store_unavailable"
    ):
        assert r.status_code != 500, r.text
        assert time.monotonic() < deadline, r.text
        await asyncio.sleep(0.1)
    assert error_of(r) == "unavailable"  # Redis answers again: no proxy to grant
