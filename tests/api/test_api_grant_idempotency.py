"""POST /v1/leases with an Idempotency-Key: a grant retried after its answer was lost gets
the same lease, never a second one; the key is per token and lives with the lease."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import Api, Recorder, error_of, ready_proxy


async def _grant(api: Api, key: str, body: dict[str, Any], *, as_other: bool = False) -> Any:
    http = api.other if as_other else api.client
    return await http.post("/v1/leases", json=body, headers={"Idempotency-Key": key})


async def test_a_retried_grant_returns_the_same_lease(api: Api, events: Recorder) -> None:
    await ready_proxy(api, "gi1", port=4101)
    await ready_proxy(api, "gi2", port=4102)
    body = {"ttl": 60, "holder": "w1", "target": "example.com"}
    first = await _grant(api, "k-1", body)
    assert first.status_code == 201, first.text
    api.clock.advance(5)
    again = await _grant(api, "k-1", {"target": "example.com", "holder": "w1", "ttl": 60})
    assert again.status_code == 201, again.text
    assert again.json() == first.json()  # same id, epoch, expiry, proxy and credentials

    # exactly one lease was made: one event, one proxy taken, the other still free
    await events.event("lease.granted", lease_id=first.json()["lease_id"])
    assert len(events.events("lease.granted")) == 1
    other = await api.client.post("/v1/leases", json={})
    assert other.status_code == 201
    assert other.json()["proxy"]["id"] != first.json()["proxy"]["id"]


async def test_the_same_key_with_another_body_is_409(api: Api) -> None:
    await ready_proxy(api, "gi3")
    assert (await _grant(api, "k-2", {"ttl": 60})).status_code == 201
    r = await _grant(api, "k-2", {"ttl": 61})
    assert r.status_code == 409
    assert error_of(r) == "idempotency_key_reused"


async def test_keys_are_per_token(api: Api) -> None:
    await ready_proxy(api, "gi4")
    await ready_proxy(api, "gi5")
    mine = await _grant(api, "shared-key", {"ttl": 60})
    theirs = await _grant(api, "shared-key", {"ttl": 60}, as_other=True)
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["lease_id"] != theirs.json()["lease_id"]


async def test_after_its_lease_ended_the_key_is_409(api: Api) -> None:
    await ready_proxy(api, "gi6")
    lease = (await _grant(api, "k-3", {"ttl": 30})).json()
    r = await api.client.post(
        f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
    )
    assert r.status_code == 200
    r = await _grant(api, "k-3", {"ttl": 30})
    assert r.status_code == 409
    assert error_of(r) == "idempotent_lease_ended"
    assert "released" in r.json()["message"]


async def test_an_invalid_key_is_400(api: Api) -> None:
    r = await _grant(api, "has space", {})
    assert r.status_code == 400
    assert error_of(r) == "invalid_idempotency_key"
