"""POST /v1/proxies: max_proxies per provider (409, nothing created) and Idempotency-Key."""

from __future__ import annotations

import asyncio

from tests.api.helpers import CAPPED, PROVIDER, Api, Recorder, error_of

from proxyfleet.common.wire.models import Phase


async def test_a_create_past_max_proxies_is_409_and_creates_nothing(api: Api) -> None:
    r = await api.admin.post("/v1/proxies", json={"provider": CAPPED, "count": 3})
    assert r.status_code == 202, r.text
    r = await api.admin.post("/v1/proxies", json={"provider": CAPPED, "count": 2})
    assert r.status_code == 409
    assert error_of(r) == "max_proxies"
    message = r.json()["message"]
    assert f"provider {CAPPED} has 3 proxies and a max_proxies of 4" in message
    assert "creating 2 more" in message
    assert (await api.registry.count_by_phase(CAPPED))[Phase.PENDING] == 3
    providers = {p["name"]: p for p in (await api.admin.get("/v1/providers")).json()["items"]}
    assert (providers[CAPPED]["max_proxies"], providers[PROVIDER]["max_proxies"]) == (4, None)


async def test_concurrent_creates_stop_at_the_limit(api: Api) -> None:
    rs = await asyncio.gather(
        *(api.admin.post("/v1/proxies", json={"provider": CAPPED}) for _ in range(10))
    )
    assert sorted(r.status_code for r in rs) == [202] * 4 + [409] * 6
    assert (await api.registry.count_by_phase(CAPPED))[Phase.PENDING] == 4


async def test_a_retried_create_with_its_key_makes_nothing_new(api: Api, intents: Recorder) -> None:
    body = {"provider": PROVIDER, "count": 2, "labels": {"a": "1", "b": "2"}}
    key = {"Idempotency-Key": "3f0c2a4e-0b7e-4b8e-9d1c-3e7d1b2a9f10"}
    first = await api.admin.post("/v1/proxies", json=body, headers=key)
    assert first.status_code == 202, first.text
    ids = [p["id"] for p in first.json()["items"]]
    # the same body, keys in another order: the same answer
    reordered = {"labels": {"b": "2", "a": "1"}, "count": 2, "provider": PROVIDER}
    again = await api.admin.post("/v1/proxies", json=reordered, headers=key)
    assert again.status_code == 202
    assert [p["id"] for p in again.json()["items"]] == ids
    assert await api.registry.size() == 2
    await intents.wait_for(lambda: len(intents.messages) >= 2, what="create intents")

    other = await api.admin.post("/v1/proxies", json={**body, "count": 3}, headers=key)
    assert other.status_code == 409
    assert error_of(other) == "idempotency_key_reused"
    assert "different request body" in other.json()["message"]
    assert await api.registry.size() == 2
    # without a key, or with another, a create is a new one
    fresh = await api.admin.post("/v1/proxies", json=body, headers={"Idempotency-Key": "k-2"})
    assert fresh.status_code == 202
    assert await api.registry.size() == 4
    assert len(intents.messages) <= 4


async def test_a_bad_key_is_400(api: Api) -> None:
    for bad in ("", "with space", "x" * 256):
        r = await api.admin.post(
            "/v1/proxies", json={"provider": PROVIDER}, headers={"Idempotency-Key": bad}
        )
        assert r.status_code == 400, (bad, r.text)
    assert await api.registry.size() == 0


async def test_the_header_is_in_the_openapi_document(api: Api) -> None:
    schema = (await api.anon.get("/schema/openapi.json")).json()
    post = schema["paths"]["/v1/proxies"]["post"]
    params = {p["name"]: p for p in post["parameters"]}
    assert params["Idempotency-Key"]["in"] == "header"
    assert params["Idempotency-Key"]["required"] is False
    assert "409" in post["responses"]
