"""Quarantine by an admin (POST/DELETE /v1/proxies/{id}/quarantine), the withheld fields of
a proxy, and the pool filter of GET /v1/proxies."""

from __future__ import annotations

import redis.asyncio as aioredis
from tests.api.helpers import ADMIN_NAME, Api, Recorder, error_of, ready_proxy, snapshot


async def test_a_quarantined_proxy_is_never_granted_until_released(
    api: Api, events: Recorder
) -> None:
    await ready_proxy(api, "q1")
    api.clock.advance(5)
    r = await api.admin.post("/v1/proxies/q1/quarantine", json={"reason": "blocked by shop"})
    assert r.status_code == 200, r.text
    proxy = r.json()
    assert (proxy["withheld"], proxy["withheld_reason"]) == ("quarantined", "blocked by shop")
    assert proxy["withheld_at"] == api.clock.now()
    quarantined = await events.event("proxy.quarantined", proxy_id="q1")
    assert (quarantined.data.reason, quarantined.data.by) == ("blocked by shop", ADMIN_NAME)

    refused = await api.client.post("/v1/leases", json={})
    assert refused.status_code == 503, refused.text
    by_id = await api.client.post("/v1/leases", json={"proxy_id": "q1"})
    assert by_id.status_code == 409, by_id.text
    assert error_of(by_id) == "proxy_quarantined"

    again = await api.admin.post("/v1/proxies/q1/quarantine", json={"reason": "other"})
    assert again.status_code == 200, again.text
    assert again.json()["withheld_reason"] == "blocked by shop"  # the first reason stays
    listed = (await api.admin.get("/v1/proxies")).json()["items"]
    assert [(p["id"], p["withheld"]) for p in listed] == [("q1", "quarantined")]

    released = await api.admin.delete("/v1/proxies/q1/quarantine")
    assert released.status_code == 200, released.text
    assert (released.json()["withheld"], released.json()["withheld_reason"]) == ("", "")
    await events.event("proxy.unquarantined", proxy_id="q1")
    granted = await api.client.post("/v1/leases", json={})
    assert granted.status_code == 201, granted.text
    assert granted.json()["proxy"]["id"] == "q1"

    not_quarantined = await api.admin.delete("/v1/proxies/q1/quarantine")
    assert not_quarantined.status_code == 409, not_quarantined.text
    assert error_of(not_quarantined) == "proxy_not_quarantined"


async def test_a_leased_proxy_keeps_its_lease_when_quarantined(api: Api) -> None:
    await ready_proxy(api, "q1")
    lease = (await api.client.post("/v1/leases", json={"proxy_id": "q1"})).json()
    r = await api.admin.post("/v1/proxies/q1/quarantine", json={"reason": "inspect"})
    assert r.status_code == 200, r.text
    assert r.json()["leased"] is True
    renewed = await api.client.post(
        f"/v1/leases/{lease['lease_id']}/renew", json={"epoch": lease["epoch"]}
    )
    assert renewed.status_code == 200, renewed.text


async def test_quarantine_refuses_bad_requests_and_changes_nothing(
    api: Api, redis_client: aioredis.Redis
) -> None:
    await ready_proxy(api, "q1")
    before = await snapshot(redis_client)
    for body in ({}, {"reason": ""}, {"reason": "x" * 201}, {"reason": 3}, {"reason": "a", "b": 1}):
        r = await api.admin.post("/v1/proxies/q1/quarantine", json=body)
        assert r.status_code == 400, (body, r.text)
        assert error_of(r) == "invalid_input", r.text
    for method in ("POST", "DELETE"):
        r = await api.admin.request(method, "/v1/proxies/ghost/quarantine", json={"reason": "x"})
        assert r.status_code == 404, (method, r.text)
        r = await api.client.request(method, "/v1/proxies/q1/quarantine", json={"reason": "x"})
        assert r.status_code == 403, (method, r.text)
    assert await snapshot(redis_client) == before


async def test_proxies_are_listed_by_pool_with_their_pool(api: Api) -> None:
    await ready_proxy(api, "m1", pool="eu")
    await ready_proxy(api, "m2", pool="us")
    await ready_proxy(api, "lone")

    async def ids(**params: str) -> list[str]:
        r = await api.admin.get("/v1/proxies", params=params)
        assert r.status_code == 200, r.text
        return [p["id"] for p in r.json()["items"]]

    assert await ids(pool="eu") == ["m1"]
    assert await ids(pool="nope") == []
    assert await ids(pool="eu", label="proxyfleet-pool=eu") == ["m1"]
    member = (await api.admin.get("/v1/proxies/m1")).json()
    assert (member["pool"], member["labels"]) == ("eu", {"proxyfleet-pool": "eu"})
    assert (await api.admin.get("/v1/proxies/lone")).json()["pool"] == ""
    for params in ({"pool": "EU"}, {"pool": "eu", "label": "proxyfleet-pool=us"}):
        r = await api.admin.get("/v1/proxies", params=params)
        assert r.status_code == 400, (params, r.text)
