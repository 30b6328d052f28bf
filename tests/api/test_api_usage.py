"""GET /v1/usage: a client token's bytes and connections per UTC day, as the gateways sync
them (written here through the same store call a gateway replica makes)."""

from __future__ import annotations

import time

import redis.asyncio as aioredis
from tests.api.helpers import CLIENT_NAME, OTHER_CLIENT_NAME, Api

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.store.client_usage import ClientCounts, ClientUsageStore


def utc_day(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


async def _synced(redis_client: aioredis.Redis, clock: ManualClock, day_shift: float) -> None:
    """One replica's sync on the API's clock, `day_shift` days ago."""
    store = ClientUsageStore(redis_client)
    day = utc_day(clock.now() - 86_400 * day_shift)
    await store.sync("replica-a", 2.0, day, [ClientCounts(CLIENT_NAME, 1, 1, 100, 2000, 3)])


async def test_a_client_reads_its_days_and_totals(api: Api, redis_client: aioredis.Redis) -> None:
    await _synced(redis_client, api.clock, 0)
    await _synced(redis_client, api.clock, 0)
    await _synced(redis_client, api.clock, 2)
    resp = await api.client.get("/v1/usage", params={"days": 3})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["client"] == CLIENT_NAME
    assert [d["day"] for d in body["days"]] == [
        utc_day(api.clock.now() - 86_400 * i) for i in (2, 1, 0)
    ]
    assert [(d["bytes_up"], d["bytes_down"], d["connections"]) for d in body["days"]] == [
        (100, 2000, 3), (0, 0, 0), (200, 4000, 6),
    ]  # fmt: skip
    assert (body["bytes_up"], body["bytes_down"], body["connections"]) == (300, 6000, 9)
    default = (await api.client.get("/v1/usage")).json()
    assert len(default["days"]) == 7


async def test_only_an_admin_reads_another_client_s(api: Api, redis_client: aioredis.Redis) -> None:
    await _synced(redis_client, api.clock, 0)
    assert (await api.other.get("/v1/usage", params={"client": CLIENT_NAME})).status_code == 403
    mine = (await api.other.get("/v1/usage")).json()
    assert (mine["client"], mine["bytes_down"]) == (OTHER_CLIENT_NAME, 0)
    admin = await api.admin.get("/v1/usage", params={"client": CLIENT_NAME, "days": 1})
    assert admin.json()["bytes_down"] == 2000
    assert (await api.client.get("/v1/usage", params={"days": 0})).status_code == 400
    assert (await api.anon.get("/v1/usage")).status_code == 401
