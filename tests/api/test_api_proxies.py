"""/v1/proxies: create, list (filters, pagination), get, delete; intents and events."""

from __future__ import annotations

import itertools

import msgspec
import redis.asyncio as aioredis
from tests.api.helpers import (
    CLIENT_NAME,
    KVM,
    OTHER,
    PROVIDER,
    Api,
    Recorder,
    error_of,
    ready_proxy,
    snapshot,
)

from proxyfleet.common.store import GrantRequest
from proxyfleet.common.wire.events import EventData
from proxyfleet.common.wire.models import CreateIntent, DeleteIntent, Phase

intent_decoder = msgspec.json.Decoder(CreateIntent | DeleteIntent)


async def test_create_stores_pending_proxies_and_publishes(
    api: Api, events: Recorder, intents: Recorder
) -> None:
    r = await api.admin.post(
        "/v1/proxies", json={"provider": PROVIDER, "count": 3, "labels": {"team": "qa"}}
    )
    assert r.status_code == 202, r.text
    items = r.json()["items"]
    assert len(items) == 3
    assert "password" not in r.text
    assert "username" not in r.text
    for item in items:
        assert item["phase"] == "pending"
        assert item["zone"] in ("z1", "z2")  # the provider's zones in turn
        assert item["labels"] == {"team": "qa"}
        stored = await api.registry.get(item["id"])
        assert stored is not None
        assert stored.phase is Phase.PENDING
        assert len(stored.password) >= 24
        assert stored.username
        assert stored.password not in r.text

    ids = {i["id"] for i in items}
    for pid in ids:
        await events.event("proxy.pending", proxy_id=pid, provider=PROVIDER)
    await intents.wait_for(lambda: len(intents.messages) >= 3, what="3 create intents")
    assert {s for s in intents.subjects()} == {f"proxyfleet.intents.{PROVIDER}.create"}
    got = {intent_decoder.decode(data).proxy_id for _, data in intents.messages}
    assert got == ids
    pending = events.events("proxy.pending")[0]
    assert pending.data.from_ == ""
    assert pending.schema_version == 1


async def test_create_with_a_placement_stores_and_shows_it(api: Api) -> None:
    placement = {"image_url": "https://images.example/d12.qcow2", "image_firmware": "bios"}
    r = await api.admin.post("/v1/proxies", json={"provider": KVM, "placement": placement})
    assert r.status_code == 202, r.text
    (item,) = r.json()["items"]
    assert item["placement"] == placement
    stored = await api.registry.get(item["id"])
    assert stored is not None
    assert stored.placement == placement
    r = await api.admin.post(
        "/v1/proxies", json={"provider": KVM, "placement": {"image": "debian"}}
    )
    assert r.status_code == 202, r.text
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER})
    (plain,) = r.json()["items"]
    assert plain["placement"] == {}


async def test_a_placement_the_provider_would_refuse_is_a_400(
    api: Api, redis_client: aioredis.Redis, intents: Recorder
) -> None:
    before = await snapshot(redis_client)
    cases = [
        (KVM, {"image": "ubuntu"}, "image"),
        (KVM, {"image": "debian", "image_url": "https://x.example/a.qcow2"}, "image_url"),
        (KVM, {"image_url": "ftp://x.example/a.qcow2"}, "image_url"),
        (KVM, {"image_url": "https://x.example/a.qcow2", "image_sha256": "abc"}, "image_sha256"),
        (KVM, {"colour": "blue"}, "colour"),
        (PROVIDER, {"image": "debian"}, "unknown key(s) image"),
    ]
    for provider, placement, named in cases:
        r = await api.admin.post("/v1/proxies", json={"provider": provider, "placement": placement})
        assert r.status_code == 400, (placement, r.text)
        assert error_of(r) == "invalid_placement", r.text
        assert named in r.json()["message"], r.text
    assert await snapshot(redis_client) == before
    assert intents.messages == []


async def test_creates_without_a_zone_spread_over_the_providers_zones(api: Api) -> None:
    """Round robin over the provider's zones [z1, z2], within a create and across creates
    (a shared counter): six proxies in four creates land three in each zone."""
    zones: list[str] = []
    for count in (3, 1, 1, 1):
        r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "count": count})
        assert r.status_code == 202, r.text
        zones += [item["zone"] for item in r.json()["items"]]
    assert sorted(zones) == ["z1"] * 3 + ["z2"] * 3
    assert all(a != b for a, b in itertools.pairwise(zones))  # alternating
    r = await api.admin.post("/v1/proxies", json={"provider": OTHER, "count": 2})
    assert [item["zone"] for item in r.json()["items"]] == ["east", "east"]  # one zone


async def test_create_in_a_named_zone(api: Api) -> None:
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "zone": "z2"})
    assert r.status_code == 202
    assert [i["zone"] for i in r.json()["items"]] == ["z2"]


async def test_create_refuses_bad_input_without_changing_state(
    api: Api, redis_client: aioredis.Redis, intents: Recorder
) -> None:
    before = await snapshot(redis_client)
    cases: list[tuple[object, str]] = [
        ({"provider": "nope"}, "unknown_provider"),
        ({"provider": PROVIDER, "zone": "east"}, "unknown_zone"),
        ({"provider": PROVIDER, "count": 0}, "invalid_input"),
        ({"provider": PROVIDER, "count": 1001}, "invalid_input"),
        ({"provider": PROVIDER, "count": "3"}, "invalid_input"),
        ({"provider": PROVIDER, "count": 2.5}, "invalid_input"),
        ({"provider": PROVIDER, "labels": {"a": 1}}, "invalid_input"),
        ({"provider": PROVIDER, "labels": {"bad key!": "v"}}, "invalid_input"),
        ({"provider": PROVIDER, "surprise": True}, "invalid_input"),
        ({"provider": PROVIDER, "placement": {"Image": "x"}}, "invalid_input"),
        ({"provider": PROVIDER, "placement": {"image": 3}}, "invalid_input"),
        ({"count": 1}, "invalid_input"),
        ([1, 2], "invalid_input"),
    ]
    for body, code in cases:
        r = await api.admin.post("/v1/proxies", json=body)
        assert r.status_code == 400, (body, r.text)
        assert error_of(r) == code, (body, r.text)
    r = await api.admin.post(
        "/v1/proxies", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    assert error_of(r) == "bad_request"
    r = await api.admin.post("/v1/proxies", content=b"")
    assert r.status_code == 400
    assert "request body" in r.json()["message"]
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "count": 0})
    assert "count" in r.json()["message"]
    assert await snapshot(redis_client) == before
    assert intents.messages == []


async def test_list_filters_and_pages(api: Api) -> None:
    for i in range(4):
        await ready_proxy(api, f"pa{i}", labels={"team": "a" if i % 2 else "b", "n": str(i)})
    await ready_proxy(api, "pb0", provider=OTHER, zone="east")
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "count": 2, "zone": "z2"})
    assert r.status_code == 202

    async def ids(**params: object) -> list[str]:
        r = await api.admin.get("/v1/proxies", params=params)  # type: ignore[arg-type]
        assert r.status_code == 200, r.text
        return [i["id"] for i in r.json()["items"]]

    assert len(await ids()) == 7
    assert await ids(provider=OTHER) == ["pb0"]
    assert len(await ids(zone="z2")) == 2
    assert len(await ids(phase="pending")) == 2
    assert await ids(phase="ready", provider=PROVIDER) == ["pa0", "pa1", "pa2", "pa3"]
    assert await ids(label="team=a") == ["pa1", "pa3"]
    assert await ids(label=["team=a", "n=3"]) == ["pa3"]
    assert await ids(label=["team=a", "n=2"]) == []

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, object] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        r = await api.admin.get("/v1/proxies", params=params)  # type: ignore[arg-type]
        body = r.json()
        seen += [i["id"] for i in body["items"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert len(seen) == 7
    assert len(set(seen)) == 7
    assert "password" not in r.text


async def test_list_refuses_bad_parameters(api: Api) -> None:
    for params in (
        {"limit": 0},
        {"limit": 501},
        {"limit": "x"},
        {"phase": "sleepy"},
        {"label": "x"},
        {"label": ["a=1", "a=2"]},
    ):
        r = await api.admin.get("/v1/proxies", params=params)
        assert r.status_code == 400, params
        assert error_of(r) == "invalid_input"
        assert "ParamType" not in r.text, r.text


async def test_parameter_messages_name_where_the_parameter_is(api: Api) -> None:
    """Litestar's validation messages come out as `<query|path> parameter <name>: ...`,
    not with its enum's name (`ParamType.QUERY parameter limit`)."""
    r = await api.admin.get("/v1/proxies", params={"limit": "x"})
    assert r.json()["message"] == "query parameter limit: Expected `int`, got `str`"
    r = await api.admin.get("/v1/proxies/" + "a" * 65)
    assert r.json()["message"].startswith("path parameter proxy_id: "), r.text
    r = await api.client.delete("/v1/leases/l1", params={"epoch": "one"})
    assert r.json()["message"].startswith("query parameter epoch: "), r.text


async def test_list_hides_deleted_proxies_unless_asked(api: Api) -> None:
    await ready_proxy(api, "pd0")
    await ready_proxy(api, "pd1")
    await api.registry.transition("pd1", Phase.DELETING)
    await api.registry.transition("pd1", Phase.DELETED)

    async def ids(**params: object) -> list[str]:
        r = await api.admin.get("/v1/proxies", params=params)  # type: ignore[arg-type]
        assert r.status_code == 200, r.text
        return [i["id"] for i in r.json()["items"]]

    assert await ids() == ["pd0"]
    assert await ids(include_deleted="true") == ["pd0", "pd1"]
    assert await ids(phase="deleted") == ["pd1"]
    assert await ids(limit=1) == ["pd0"]


async def test_a_malformed_cursor_is_a_400_not_page_one(api: Api) -> None:
    await ready_proxy(api, "pc0")
    for cursor in ("zz%%", "not a cursor", "-x", "A" * 10, "a" * 65):
        r = await api.admin.get("/v1/proxies", params={"cursor": cursor})
        assert r.status_code == 400, (cursor, r.text)
        assert r.json()["message"].startswith("query parameter cursor: "), r.text
    r = await api.admin.get("/v1/proxies", params={"cursor": "pc0"})
    assert r.json() == {"items": [], "next_cursor": None}


async def test_get_one_and_404(api: Api) -> None:
    await ready_proxy(api, "pone")
    r = await api.admin.get("/v1/proxies/pone")
    assert r.status_code == 200
    body = r.json()
    assert body["phase"] == "ready"
    assert body["host"] == "127.0.0.1"
    assert body["leased"] is False
    assert "s3cret-pass" not in r.text
    r = await api.admin.get("/v1/proxies/pmissing")
    assert r.status_code == 404
    assert error_of(r) == "not_found"


async def test_delete_moves_to_deleting_and_publishes(
    api: Api, events: Recorder, intents: Recorder
) -> None:
    proxy = await ready_proxy(api, "pdel")
    r = await api.admin.delete("/v1/proxies/pdel")
    assert r.status_code == 202, r.text
    assert r.json()["phase"] == "deleting"
    stored = await api.registry.get("pdel")
    assert stored is not None
    assert stored.phase is Phase.DELETING
    ev = await events.event("proxy.deleting", proxy_id="pdel")
    assert ev.data == EventData(from_="ready", gen=proxy.gen + 1)
    delete_subject = f"proxyfleet.intents.{PROVIDER}.delete"

    def deletes() -> list[bytes]:
        return [data for subject, data in intents.messages if subject == delete_subject]

    await intents.wait_for(lambda: len(deletes()) == 1, what="delete intent")
    intent = intent_decoder.decode(deletes()[0])
    assert isinstance(intent, DeleteIntent)
    assert intent.proxy_id == "pdel"

    # Idempotent: deleting again answers 202 with the current state; no second transition.
    r = await api.admin.delete("/v1/proxies/pdel")
    assert r.status_code == 202
    assert r.json()["gen"] == stored.gen
    await api.registry.transition("pdel", Phase.DELETED)
    r = await api.admin.delete("/v1/proxies/pdel")
    assert r.status_code == 202
    assert r.json()["phase"] == "deleted"
    assert len(events.events("proxy.deleting")) == 1
    assert (await api.admin.delete("/v1/proxies/pnope")).status_code == 404


async def test_delete_of_a_leased_proxy_needs_force(
    api: Api, events: Recorder, redis_client: aioredis.Redis
) -> None:
    await ready_proxy(api, "pleased")
    lease = await api.services.backends.leases.grant(
        GrantRequest(ttl=60, proxy_id="pleased", client=CLIENT_NAME)
    )
    before = await snapshot(redis_client)
    r = await api.admin.delete("/v1/proxies/pleased")
    assert r.status_code == 409
    assert error_of(r) == "proxy_leased"
    assert "force=true" in r.json()["message"]
    assert await snapshot(redis_client) == before
    r = await api.admin.delete("/v1/proxies/pleased", params={"force": "maybe"})
    assert r.status_code == 400

    r = await api.admin.delete("/v1/proxies/pleased", params={"force": "true"})
    assert r.status_code == 202
    assert r.json()["leased"] is False
    revoked = await events.event("lease.revoked", proxy_id="pleased")
    assert revoked.lease_id == lease.id
    r = await api.client.get(f"/v1/leases/{lease.id}")
    assert r.json()["state"] == "revoked"
    r = await api.client.post(f"/v1/leases/{lease.id}/release", json={"epoch": lease.epoch})
    assert r.status_code == 409
