"""/v1/pools: declare (PUT), read, merge-patch and delete pools; owners other than the API
are refused with a 409 naming them; bad specs are a 400 naming the field, storing nothing."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from tests.api.helpers import CAPPED, PROVIDER, Api, Recorder, error_of, ready_proxy, snapshot

from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec
from proxyfleet.common.store import PoolStore
from proxyfleet.common.wire.models import Withheld

MERGE_PATCH = {"content-type": "application/merge-patch+json"}


def pools_of(api: Api, redis_client: aioredis.Redis) -> PoolStore:
    """The store the API writes to, on the API's clock (for pools other sources declare)."""
    return PoolStore(redis_client, api.clock)


async def test_put_creates_then_replaces_and_an_unchanged_spec_changes_nothing(
    api: Api, events: Recorder
) -> None:
    spec: dict[str, Any] = {"provider": PROVIDER, "size": 3, "labels": {"team": "qa"}}
    r = await api.admin.put("/v1/pools/eu", json=spec)
    assert r.status_code == 201, r.text
    pool = r.json()
    assert (pool["name"], pool["owner"], pool["gen"], pool["desired"]) == ("eu", "api", 1, 3)
    assert pool["spec"] == spec  # defaults left out
    assert pool["deleting"] is False
    await events.event("pool.applied", pool="eu")

    again = await api.admin.put("/v1/pools/eu", json=spec)
    assert again.status_code == 200, again.text
    assert again.json()["gen"] == 1

    bigger = await api.admin.put("/v1/pools/eu", json={**spec, "size": 5, "zones": ["z2"]})
    assert bigger.status_code == 200, bigger.text
    assert (bigger.json()["gen"], bigger.json()["desired"]) == (2, 5)

    got = await api.admin.get("/v1/pools/eu")
    assert got.status_code == 200
    assert got.json()["spec"]["zones"] == ["z2"]
    await api.admin.put("/v1/pools/us", json={"provider": PROVIDER, "size": 1})
    listed = (await api.admin.get("/v1/pools")).json()["items"]
    assert [p["name"] for p in listed] == ["eu", "us"]


async def test_a_bad_spec_is_a_400_naming_the_field_and_stores_nothing(
    api: Api, redis_client: aioredis.Redis
) -> None:
    before = await snapshot(redis_client)
    cases: list[tuple[object, str]] = [
        ({"provider": PROVIDER, "size": 2, "colour": "red"}, "colour"),
        ({"provider": PROVIDER, "size": "2"}, "size"),
        ({"provider": PROVIDER, "size": -1}, "size"),
        ({"provider": "nope", "size": 1}, "unknown provider 'nope'"),
        ({"provider": PROVIDER, "size": 1, "zones": ["east"]}, "zones[0]"),
        ({"provider": CAPPED, "size": 5}, "size: 5 members need more"),
        ({"provider": CAPPED, "autoscale": {"min": 1, "max": 9}}, "autoscale.max"),
        ({"provider": PROVIDER, "size": 1, "max_age": 0}, "max_age"),
        ({"provider": PROVIDER}, "size: required"),
        ({"provider": PROVIDER, "size": 1, "autoscale": {"min": 1}}, "autoscale"),
        ({"provider": PROVIDER, "size": 1, "labels": {"proxyfleet-pool": "x"}}, "labels."),
        ([1, 2], "pool eu: "),
    ]
    for body, named in cases:
        r = await api.admin.put("/v1/pools/eu", json=body)
        assert r.status_code == 400, (body, r.text)
        assert error_of(r) == "invalid_pool", (body, r.text)
        assert named in r.json()["message"], (body, r.text)
    for bad_name in ("EU", "-eu", "eu-", "e_u", "a" * 64):
        r = await api.admin.put(f"/v1/pools/{bad_name}", json={"provider": PROVIDER, "size": 1})
        assert r.status_code == 400, (bad_name, r.text)
        assert r.json()["message"].startswith("path parameter name"), r.text
    assert await snapshot(redis_client) == before


async def test_unknown_pools_are_404(api: Api) -> None:
    for method in ("GET", "DELETE"):
        r = await api.admin.request(method, "/v1/pools/nope")
        assert r.status_code == 404, (method, r.text)
        assert r.json() == {"error": "not_found", "message": "pool nope not found"}
    r = await api.admin.patch("/v1/pools/nope", json={"size": 1})
    assert r.status_code == 404


async def test_patch_merges_into_the_spec(api: Api) -> None:
    await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 2, "max_age": 60})
    r = await api.admin.patch("/v1/pools/eu", json={"size": 4}, headers=MERGE_PATCH)
    assert r.status_code == 200, r.text
    assert (r.json()["spec"]["size"], r.json()["gen"], r.json()["desired"]) == (4, 2, 4)
    # an object merges, null removes a key, application/json is taken too
    r = await api.admin.patch(
        "/v1/pools/eu", json={"size": None, "max_age": None, "autoscale": {"min": 1, "max": 8}}
    )
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"provider": PROVIDER, "autoscale": {"min": 1, "max": 8}}
    r = await api.admin.patch("/v1/pools/eu", json={"autoscale": {"max": 40}})
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"provider": PROVIDER, "autoscale": {"min": 1, "max": 40}}
    assert r.json()["gen"] == 4
    unchanged = await api.admin.patch("/v1/pools/eu", json={})
    assert (unchanged.status_code, unchanged.json()["gen"]) == (200, 4)


async def test_patch_refuses_what_put_refuses_and_changes_nothing(
    api: Api, redis_client: aioredis.Redis
) -> None:
    await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 2})
    before = await snapshot(redis_client)
    for body, named in (
        ({"size": -1}, "size"),
        ({"colour": "red"}, "colour"),
        ({"provider": "nope"}, "unknown provider"),
        ({"providers": [{"name": PROVIDER}]}, "provider: expected either"),
        ({"autoscale": {"min": 3, "max": 2}}, "autoscale.min"),
    ):
        r = await api.admin.patch("/v1/pools/eu", json=body, headers=MERGE_PATCH)
        assert r.status_code == 400, (body, r.text)
        assert error_of(r) == "invalid_pool", (body, r.text)
        assert named in r.json()["message"], (body, r.text)
    not_objects: list[object] = [[{"size": 1}], "size", 3]
    for not_object in not_objects:
        r = await api.admin.patch("/v1/pools/eu", json=not_object, headers=MERGE_PATCH)
        assert r.status_code == 400, (not_object, r.text)
        assert "JSON object" in r.json()["message"]
    deep: dict[str, Any] = {"autoscale": {}}
    node = deep["autoscale"]
    for _ in range(40):
        node["x"] = {}
        node = node["x"]
    r = await api.admin.patch("/v1/pools/eu", json=deep, headers=MERGE_PATCH)
    assert r.status_code == 400, r.text
    assert await snapshot(redis_client) == before


async def test_a_concurrent_change_is_a_409(api: Api) -> None:
    await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 2})
    seen = await api.services.pools.get("eu")
    await api.admin.patch("/v1/pools/eu", json={"size": 3})
    with pytest.raises(Conflict, match="generation 2, not 1"):
        await api.services.pools.apply(
            "eu", PoolSpec(provider=PROVIDER, size=5), expected_gen=seen.gen
        )
    assert (await api.admin.get("/v1/pools/eu")).json()["spec"]["size"] == 3


async def test_a_pool_another_source_declares_is_read_but_never_changed(
    api: Api, redis_client: aioredis.Redis
) -> None:
    pools = pools_of(api, redis_client)
    await pools.apply("eu", PoolSpec(provider=PROVIDER, size=2), Owner.CONFIG, "providers.yaml")
    got = await api.admin.get("/v1/pools/eu")
    assert (got.status_code, got.json()["owner"], got.json()["owner_ref"]) == (
        200, "config", "providers.yaml",
    )  # fmt: skip
    before = await snapshot(redis_client)
    for method, kwargs in (
        ("PUT", {"json": {"provider": PROVIDER, "size": 3}}),
        ("PUT", {"json": {"provider": "nope", "size": 3}}),  # owned, before the providers
        ("PATCH", {"json": {"size": 3}}),
        ("DELETE", {}),
        ("DELETE", {"params": {"keep_proxies": "true"}}),
    ):
        r = await api.admin.request(method, "/v1/pools/eu", **kwargs)
        assert r.status_code == 409, (method, r.text)
        assert error_of(r) == "pool_owned", r.text
        assert "declared by the config file providers.yaml" in r.json()["message"], r.text
    assert await snapshot(redis_client) == before


async def test_delete_drains_and_refuses_changes_meanwhile(api: Api) -> None:
    await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 1})
    await ready_proxy(api, "m1", pool="eu")
    r = await api.admin.delete("/v1/pools/eu")
    assert r.status_code == 202, r.text
    assert (r.json()["name"], r.json()["deleting"]) == ("eu", True)
    again = await api.admin.delete("/v1/pools/eu")
    assert again.status_code == 202, again.text  # idempotent while it is being deleted
    for method, body in (("PUT", {"provider": PROVIDER, "size": 2}), ("PATCH", {"size": 2})):
        r = await api.admin.request(method, "/v1/pools/eu", json=body)
        assert r.status_code == 409, (method, r.text)
        assert error_of(r) == "pool_deleting", r.text
    assert (await api.registry.get("m1") or pytest.fail("m1 gone")).pool == "eu"


async def test_delete_keeping_the_proxies_leaves_them_to_the_plain_fleet(api: Api) -> None:
    await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 2})
    await ready_proxy(api, "m1", pool="eu", labels={"team": "qa"})
    r = await api.admin.delete("/v1/pools/eu", params={"keep_proxies": "true"})
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "eu", "kept_proxies": True}
    assert (await api.admin.get("/v1/pools/eu")).status_code == 404
    kept = await api.registry.get("m1") or pytest.fail("m1 gone")
    assert (kept.pool, kept.labels, kept.withheld) == ("", {"team": "qa"}, Withheld.NO)


async def test_pools_need_the_admin_scope(api: Api) -> None:
    for method, path in (
        ("GET", "/v1/pools"),
        ("GET", "/v1/pools/eu"),
        ("PUT", "/v1/pools/eu"),
        ("PATCH", "/v1/pools/eu"),
        ("DELETE", "/v1/pools/eu"),
    ):
        r = await api.client.request(method, path, json={"provider": PROVIDER, "size": 1})
        assert r.status_code == 403, (method, path, r.text)
        assert error_of(r) == "forbidden"
