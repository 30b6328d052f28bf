"""A lease belongs to the client that granted it: another client gets 404 for it, whatever it
does; an admin may act on any lease. Token names (never secrets) reach logs and events."""

from __future__ import annotations

import json

import httpx
import pytest
import redis.asyncio as aioredis
from tests.api.helpers import (
    ADMIN,
    ADMIN_NAME,
    CLIENT,
    CLIENT_NAME,
    OTHER_CLIENT,
    OTHER_CLIENT_NAME,
    Api,
    ApiFactory,
    Recorder,
    error_of,
    ready_proxy,
    snapshot,
)

from proxyfleet.common.observability.logging import configure_logging


async def grant(http: httpx.AsyncClient) -> dict[str, object]:
    r = await http.post("/v1/leases", json={"ttl": 60, "holder": "w1"})
    assert r.status_code == 201, r.text
    body: dict[str, object] = r.json()
    return body


def _calls(lease_id: object, epoch: object) -> list[tuple[str, str, dict[str, object] | None]]:
    return [
        ("GET", f"/v1/leases/{lease_id}", None),
        ("POST", f"/v1/leases/{lease_id}/renew", {"epoch": epoch, "ttl": 30}),
        ("POST", f"/v1/leases/{lease_id}/report", {"epoch": epoch, "outcome": "blocked"}),
        ("POST", f"/v1/leases/{lease_id}/release", {"epoch": epoch}),
        ("DELETE", f"/v1/leases/{lease_id}?epoch={epoch}", None),
    ]


async def test_another_client_gets_404_and_changes_nothing(
    api: Api, redis_client: aioredis.Redis
) -> None:
    await ready_proxy(api, "po1")
    lease = await grant(api.client)
    lid, epoch = lease["lease_id"], lease["epoch"]
    before = await snapshot(redis_client)
    unknown = "l" + "0" * 35
    for method, path, body in _calls(lid, epoch):
        r = await api.other.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert error_of(r) == "not_found"
        # word for word what a lease that does not exist gets: nothing tells it apart
        same = await api.other.request(method, path.replace(str(lid), unknown), json=body)
        assert r.json()["message"].replace(str(lid), unknown) == same.json()["message"]
    # the outbox gained nothing either (keys and fields identical)
    assert await snapshot(redis_client) == before

    r = await api.client.get(f"/v1/leases/{lid}")
    assert (r.status_code, r.json()["state"], r.json()["client"]) == (200, "active", CLIENT_NAME)


async def test_an_ended_lease_stays_hidden_from_other_clients(api: Api) -> None:
    await ready_proxy(api, "po2")
    lease = await grant(api.client)
    lid, epoch = lease["lease_id"], lease["epoch"]
    r = await api.client.post(f"/v1/leases/{lid}/release", json={"epoch": epoch})
    assert r.status_code == 200
    # its holder hears "released" (409); another client cannot tell it ever existed (404)
    r = await api.client.post(f"/v1/leases/{lid}/renew", json={"epoch": epoch})
    assert r.status_code == 409
    for method, path, body in _calls(lid, epoch):
        r = await api.other.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)


async def test_the_holder_and_an_admin_may_act_on_the_lease(api: Api) -> None:
    await ready_proxy(api, "po3")
    lease = await grant(api.client)
    lid, epoch = lease["lease_id"], lease["epoch"]
    ok = await api.client.post(f"/v1/leases/{lid}/renew", json={"epoch": epoch, "ttl": 30})
    assert ok.status_code == 200
    r = await api.admin.get(f"/v1/leases/{lid}")
    assert (r.status_code, r.json()["client"]) == (200, CLIENT_NAME)
    for path, body in (
        (f"/v1/leases/{lid}/renew", {"epoch": epoch, "ttl": 30}),
        (f"/v1/leases/{lid}/report", {"epoch": epoch, "outcome": "ok"}),
        (f"/v1/leases/{lid}/release", {"epoch": epoch}),
    ):
        r = await api.admin.post(path, json=body)
        assert r.status_code == 200, (path, r.text)


async def test_a_lease_granted_by_an_admin_is_hidden_from_clients(api: Api) -> None:
    await ready_proxy(api, "po4")
    lease = await grant(api.admin)
    r = await api.client.get(f"/v1/leases/{lease['lease_id']}")
    assert r.status_code == 404
    assert (await api.admin.get(f"/v1/leases/{lease['lease_id']}")).json()["client"] == ADMIN_NAME


async def test_every_lease_event_names_its_owner_and_who_acted(
    start_api: ApiFactory, events: Recorder
) -> None:
    """`client` is the owner on every lease event; `by` is whoever called (an admin ending a
    client's lease shows in the event), absent when nobody did (the revocation)."""
    api = await start_api()
    await ready_proxy(api, "po6")
    await ready_proxy(api, "po7")
    first = await grant(api.client)
    lid, epoch = first["lease_id"], first["epoch"]
    await api.client.post(f"/v1/leases/{lid}/renew", json={"epoch": epoch, "ttl": 30})
    await api.admin.post(f"/v1/leases/{lid}/report", json={"epoch": epoch, "outcome": "ok"})
    await api.admin.post(f"/v1/leases/{lid}/release", json={"epoch": epoch})
    second = await grant(api.client)
    leased = second["proxy"]
    assert isinstance(leased, dict)
    gone = await api.admin.delete(f"/v1/proxies/{leased['id']}?force=true")
    assert gone.status_code in (200, 202), gone.text

    acted = {}
    for kind in ("granted", "renewed", "reported", "released"):
        e = await events.event(f"lease.{kind}", lease_id=lid)
        acted[kind] = (e.data.client, e.data.by)
    assert acted == {
        "granted": (CLIENT_NAME, CLIENT_NAME),
        "renewed": (CLIENT_NAME, CLIENT_NAME),
        "reported": (CLIENT_NAME, ADMIN_NAME),
        "released": (CLIENT_NAME, ADMIN_NAME),
    }
    revoked = await events.event("lease.revoked", lease_id=second["lease_id"])
    assert (revoked.data.client, revoked.data.by) == (CLIENT_NAME, None)


async def test_names_in_logs_and_events_never_secrets(
    start_api: ApiFactory, events: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("api", "debug", "json")
    api = await start_api()
    await ready_proxy(api, "po5")
    lease = await grant(api.client)
    lid, epoch = lease["lease_id"], lease["epoch"]
    await api.client.post(f"/v1/leases/{lid}/report", json={"epoch": epoch, "outcome": "ok"})
    await api.other.post(f"/v1/leases/{lid}/renew", json={"epoch": epoch})
    await api.client.post(f"/v1/leases/{lid}/release", json={"epoch": epoch})
    await api.anon.get("/v1/proxies", headers={"Authorization": f"Bearer {ADMIN}x"})
    await events.wait_for(lambda: bool(events.events("lease.released")), what="released")

    granted = await events.event("lease.granted", lease_id=lid)
    assert granted.data.client == CLIENT_NAME
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    by_event = {line["event"]: line for line in lines}
    assert by_event["api.tokens_configured"]["client"] == [CLIENT_NAME, OTHER_CLIENT_NAME]
    assert by_event["api.tokens_configured"]["admin"] == [ADMIN_NAME]
    # api.lease_granted is a debug line: its level may be bound by an earlier test's logging
    # (structlog caches a logger on first use), so the event above stands for it.
    assert by_event["api.lease_reported"]["client"] == CLIENT_NAME
    published = repr(events.messages)
    for secret in (ADMIN, CLIENT, OTHER_CLIENT):
        assert secret not in out
        assert secret not in published
