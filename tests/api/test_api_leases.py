"""/v1/leases: grant, get, renew, report, release; 409/503 with Retry-After; the sweeper."""

from __future__ import annotations

import asyncio
import json

import redis.asyncio as aioredis
from tests.api.helpers import (
    OTHER,
    PROVIDER,
    Api,
    ApiFactory,
    Recorder,
    error_of,
    probed,
    ready_proxy,
    snapshot,
)

from proxyfleet.common.messaging.jetstream import event_decoder


async def grant(api: Api, **body: object) -> dict[str, object]:
    r = await api.client.post("/v1/leases", json=body)
    assert r.status_code == 201, r.text
    data: dict[str, object] = r.json()
    return data


async def test_grant_returns_the_proxy_url_with_credentials(api: Api, events: Recorder) -> None:
    await ready_proxy(api, "pg1", port=4001)
    r = await api.client.post(
        "/v1/leases", json={"ttl": 30, "holder": "worker-1", "target": "Example.COM"}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    # epochs are a hybrid-logical clock: at least the clock in ms, growing per proxy
    assert body["epoch"] >= int(api.clock.now() * 1000)
    assert body["expires_at"] == api.clock.now() + 30
    assert body["holder"] == "worker-1"
    assert body["target"] == "example.com"
    assert body["proxy"] == {
        "id": "pg1",
        "host": "127.0.0.1",
        "port": 4001,
        "url": "http://user:s3cret-pass@127.0.0.1:4001",
        "provider": PROVIDER,
        "zone": "z1",
        "egress_ip": "",  # health has not seen its exit address
    }
    ev = await events.event("lease.granted", lease_id=body["lease_id"])
    assert ev.proxy_id == "pg1"
    assert ev.provider == PROVIDER
    assert ev.data.epoch == body["epoch"]
    assert "s3cret-pass" not in str(events.messages)

    r = await api.client.get(f"/v1/leases/{body['lease_id']}")
    assert r.status_code == 200
    assert r.json()["state"] == "active"
    assert r.json()["proxy_id"] == "pg1"
    assert "s3cret-pass" not in r.text
    r = await api.admin.get("/v1/proxies/pg1")
    assert r.json()["leased"] is True
    assert "s3cret-pass" not in r.text


async def test_ttl_defaults_and_is_capped(api: Api) -> None:
    await ready_proxy(api, "pt1")
    await ready_proxy(api, "pt2")
    first = await grant(api)
    assert first["expires_at"] == api.clock.now() + 60  # default_lease_ttl
    assert (first["ttl"], first["ttl_capped"]) == (60, False)
    second = await grant(api, ttl=10_000)
    assert second["expires_at"] == api.clock.now() + 600  # max_lease_ttl
    assert (second["ttl"], second["ttl_capped"]) == (600, True)
    # a renew says it was cut too; one at the cap exactly is not
    lid, ep = second["lease_id"], second["epoch"]
    r = await api.client.post(f"/v1/leases/{lid}/renew", json={"epoch": ep, "ttl": 5000})
    assert r.status_code == 200, r.text
    assert (r.json()["ttl"], r.json()["ttl_capped"]) == (600, True)
    assert r.json()["expires_at"] == api.clock.now() + 600
    r = await api.client.post(f"/v1/leases/{lid}/renew", json={"epoch": ep, "ttl": 600})
    assert (r.json()["ttl"], r.json()["ttl_capped"]) == (600, False)


async def test_openapi_says_the_server_caps_the_ttl(api: Api) -> None:
    schemas = (await api.client.get("/schema/openapi.json")).json()["components"]["schemas"]
    for name in ("GrantLease", "RenewLease"):
        assert "--max-lease-ttl" in json.dumps(schemas[name]["properties"]["ttl"])
    assert {"ttl", "ttl_capped"} <= set(schemas["GrantedLease"]["required"])


async def test_selectors(api: Api) -> None:
    await ready_proxy(api, "ps1", zone="z1", labels={"tier": "gold"})
    await ready_proxy(api, "ps2", zone="z2")
    await ready_proxy(api, "ps3", provider=OTHER, zone="east")
    assert (await grant(api, provider=OTHER))["proxy"]["id"] == "ps3"  # type: ignore[index]
    assert (await grant(api, labels={"tier": "gold"}))["proxy"]["id"] == "ps1"  # type: ignore[index]
    assert (await grant(api, zone="z2"))["proxy"]["id"] == "ps2"  # type: ignore[index]


async def test_unavailable_is_503_with_retry_after(api: Api) -> None:
    r = await api.client.post("/v1/leases", json={})
    assert r.status_code == 503
    assert error_of(r) == "unavailable"
    assert int(r.headers["retry-after"]) >= 1

    await ready_proxy(api, "pu1")
    lease = await grant(api, ttl=117)
    r = await api.client.post("/v1/leases", json={})
    assert r.status_code == 503
    assert r.headers["retry-after"] == "117"  # when the only lease ends
    r = await api.client.post(
        f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
    )
    assert r.status_code == 200
    r = await api.client.post("/v1/leases", json={})
    assert r.status_code == 503
    assert r.headers["retry-after"] == "30"  # the cooldown left
    api.clock.advance(29.5)
    r = await api.client.post("/v1/leases", json={})
    assert r.headers["retry-after"] == "1"  # ceil(0.5)
    api.clock.advance(0.5)
    await probed(api, "pu1")  # health kept probing meanwhile
    await grant(api)


async def test_named_proxy_conflict_is_409_with_retry_after(api: Api) -> None:
    await ready_proxy(api, "pn1")
    await grant(api, proxy_id="pn1", ttl=45)
    r = await api.client.post("/v1/leases", json={"proxy_id": "pn1"})
    assert r.status_code == 409
    assert error_of(r) == "conflict"
    assert "leased" in r.json()["message"]
    assert r.headers["retry-after"] == "45"
    r = await api.client.post("/v1/leases", json={"proxy_id": "pnope"})
    assert r.status_code == 404
    assert error_of(r) == "not_found"


async def test_renew_report_release_and_stale_epochs(
    api: Api, events: Recorder, redis_client: aioredis.Redis
) -> None:
    await ready_proxy(api, "pr1")
    lease = await grant(api, ttl=30, target="example.com")
    lid = lease["lease_id"]
    ep = lease["epoch"]
    assert isinstance(ep, int)

    api.clock.advance(10)
    r = await api.client.post(f"/v1/leases/{lid}/renew", json={"epoch": ep, "ttl": 100})
    assert r.status_code == 200, r.text
    assert r.json()["expires_at"] == api.clock.now() + 100
    assert r.json()["proxy_id"] == "pr1"
    await events.event("lease.renewed", lease_id=lid, proxy_id="pr1")

    r = await api.client.post(f"/v1/leases/{lid}/report", json={"epoch": ep, "outcome": "ok"})
    assert r.status_code == 200
    assert r.json() == {
        "lease_id": lid,
        "proxy_id": "pr1",
        "outcome": "ok",
        "target": "example.com",
    }
    await events.event("lease.reported", lease_id=lid)

    before = await snapshot(redis_client)
    for path, body in (
        ("renew", {"epoch": ep + 1}),
        ("report", {"epoch": ep + 1, "outcome": "ok"}),
        ("release", {"epoch": ep + 1}),
    ):
        r = await api.client.post(f"/v1/leases/{lid}/{path}", json=body)
        assert r.status_code == 409, path
        assert "stale epoch" in r.json()["message"]
    r = await api.client.delete(f"/v1/leases/{lid}", params={"epoch": ep + 1})
    assert r.status_code == 409
    assert await snapshot(redis_client) == before

    r = await api.client.delete(f"/v1/leases/{lid}", params={"epoch": ep})
    assert r.status_code == 200
    assert r.json() == {"lease_id": lid, "proxy_id": "pr1", "state": "released"}
    await events.event("lease.released", lease_id=lid, proxy_id="pr1")
    assert (await api.client.get(f"/v1/leases/{lid}")).json()["state"] == "released"
    for path in ("renew", "release"):
        r = await api.client.post(f"/v1/leases/{lid}/{path}", json={"epoch": ep})
        assert r.status_code == 409
        assert "released" in r.json()["message"]
    r = await api.client.post("/v1/leases/lnope/release", json={"epoch": 1})
    assert r.status_code == 404


async def test_blocked_report_bans_the_proxy_for_that_target(api: Api) -> None:
    await ready_proxy(api, "pb1")
    lease = await grant(api, ttl=30)
    lid = lease["lease_id"]
    r = await api.client.post(
        f"/v1/leases/{lid}/report",
        json={"epoch": lease["epoch"], "outcome": "blocked", "target": "Shop.example"},
    )
    assert r.status_code == 200
    assert r.json()["target"] == "shop.example"
    await api.client.post(f"/v1/leases/{lid}/release", json={"epoch": lease["epoch"]})
    api.clock.advance(31)  # past the cooldown
    await probed(api, "pb1")
    r = await api.client.post("/v1/leases", json={"target": "shop.example"})
    assert r.status_code == 503
    assert (await grant(api, target="other.example"))["proxy"]["id"] == "pb1"  # type: ignore[index]


async def test_bad_input_is_400_and_changes_nothing(api: Api, redis_client: aioredis.Redis) -> None:
    await ready_proxy(api, "pbad")
    lease = await grant(api, ttl=30)
    lid = lease["lease_id"]
    before = await snapshot(redis_client)
    grants: list[object] = [
        {"ttl": "5"},
        {"ttl": 0},
        {"ttl": -1},
        {"ttl": True},
        {"holder": 7},
        {"holder": "x" * 201},
        {"target": "not a domain"},
        {"proxy_id": "../etc"},
        {"labels": ["a"]},
        {"provider": "nope"},
        {"provider": PROVIDER, "zone": "east"},
        {"zone": "mars"},
        {"unknown": 1},
        "just a string",
    ]
    for body in grants:
        r = await api.client.post("/v1/leases", json=body)
        assert r.status_code == 400, (body, r.text)
        error_of(r)
    for path, body in (
        ("renew", {"epoch": "1"}),
        ("renew", {"epoch": 0}),
        ("renew", {"epoch": 1.5}),
        ("renew", {}),
        ("renew", {"epoch": 1, "ttl": "long"}),
        ("report", {"epoch": 1, "outcome": "meh"}),
        ("report", {"epoch": 1}),
        ("release", {"epoch": None}),
        ("release", {"epoch": 1, "extra": 1}),
    ):
        r = await api.client.post(f"/v1/leases/{lid}/{path}", json=body)
        assert r.status_code == 400, (path, body, r.text)
        assert error_of(r) == "invalid_input"
    r = await api.client.post(
        "/v1/leases", content=b'{"ttl": ', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    r = await api.client.delete(f"/v1/leases/{lid}")
    assert r.status_code == 400
    r = await api.client.delete(f"/v1/leases/{lid}", params={"epoch": "one"})
    assert r.status_code == 400
    assert await snapshot(redis_client) == before
    r = await api.client.post("/v1/leases", json={"ttl": "5"})
    assert "ttl" in r.json()["message"]


async def test_sweeper_expires_leases_and_announces_them(api: Api, events: Recorder) -> None:
    await ready_proxy(api, "px1")
    lease = await grant(api, ttl=5)
    lid = lease["lease_id"]
    await asyncio.sleep(0.15)  # a few sweeps: nothing is due yet
    assert (await api.client.get(f"/v1/leases/{lid}")).json()["state"] == "active"
    api.clock.advance(6)
    ev = await events.event("lease.expired", lease_id=lid)
    assert ev.proxy_id == "px1"
    assert (await api.client.get(f"/v1/leases/{lid}")).json()["state"] == "expired"
    r = await api.client.post(
        f"/v1/leases/{lid}/report", json={"epoch": lease["epoch"], "outcome": "ok"}
    )
    assert r.status_code == 409
    assert "expired" in r.json()["message"]
    assert len(events.events("lease.expired")) == 1


async def test_two_replicas_sweep_each_lease_once(
    start_api: ApiFactory, events: Recorder, api: Api
) -> None:
    other = await start_api()
    for i in range(6):
        await ready_proxy(api, f"pw{i}")
    leases = [await grant(api, ttl=1) for _ in range(3)] + [
        await grant(other, ttl=1) for _ in range(3)
    ]
    api.clock.advance(2)
    other.clock.advance(2)
    await events.wait_for(lambda: len(events.events("lease.expired")) >= 6, what="6 expiries")
    await asyncio.sleep(0.2)
    expired = [e.lease_id for e in events.events("lease.expired")]
    assert sorted(expired) == sorted(str(x["lease_id"]) for x in leases)


async def test_grant_stands_when_nats_is_away(api: Api, redis_client: aioredis.Redis) -> None:
    """The grant needs no NATS: its event waits in the outbox until a relay can publish it."""
    await ready_proxy(api, "pq1")
    outbox = api.services.backends.registry.outbox
    await api.services.backends.nats.close()
    lease = await grant(api, ttl=30)
    assert lease["proxy"]["id"] == "pq1"  # type: ignore[index]
    entries = await outbox.peek()
    granted = [e for e in entries if e.subject == "proxyfleet.events.lease.granted"]
    assert [event_decoder.decode(e.body).lease_id for e in granted] == [lease["lease_id"]]
