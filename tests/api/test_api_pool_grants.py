"""Grants by pool (`"pool"` in POST /v1/leases): only members, refusals counted for the
pool's autoscale, an unknown pool a 404."""

from __future__ import annotations

import redis.asyncio as aioredis
from tests.api.helpers import PROVIDER, Api, error_of, ready_proxy

from proxyfleet.common.store import PoolStore


async def test_a_grant_by_pool_takes_only_its_members(
    api: Api, redis_client: aioredis.Redis
) -> None:
    await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 1})
    await ready_proxy(api, "lone")
    await ready_proxy(api, "m1", pool="eu")
    granted = await api.client.post("/v1/leases", json={"pool": "eu"})
    assert granted.status_code == 201, granted.text
    assert granted.json()["proxy"]["id"] == "m1"
    refused = await api.client.post("/v1/leases", json={"pool": "eu"})
    assert refused.status_code == 503, refused.text
    assert refused.headers["retry-after"]
    assert await PoolStore(redis_client, api.clock).take_refused("eu") == 1
    not_member = await api.client.post("/v1/leases", json={"pool": "eu", "proxy_id": "lone"})
    assert not_member.status_code == 409, not_member.text
    anywhere = await api.client.post("/v1/leases", json={})
    assert anywhere.json()["proxy"]["id"] == "lone"


async def test_an_unknown_pool_is_a_404_and_a_bad_name_a_400(api: Api) -> None:
    await ready_proxy(api, "lone")
    for body in ({"pool": "nope"}, {"pool": "nope", "proxy_id": "lone"}):
        r = await api.client.post("/v1/leases", json=body)
        assert r.status_code == 404, (body, r.text)
        assert r.json() == {"error": "not_found", "message": "pool nope not found"}
    for name in ("EU", "", "a" * 64, 3):
        r = await api.client.post("/v1/leases", json={"pool": name})
        assert r.status_code == 400, (name, r.text)
        assert "field pool" in r.json()["message"]
        assert error_of(r) == "invalid_input"
    lone = await api.registry.get("lone")
    assert lone is not None
    assert lone.lease_id == ""  # nothing was granted
