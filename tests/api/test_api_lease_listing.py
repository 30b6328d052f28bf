"""GET /v1/leases: active leases a page at a time, soonest expiry first; each client sees
its own, an admin every one."""

from __future__ import annotations

from typing import Any

import httpx
from tests.api.helpers import Api, error_of, ready_proxy


async def _grant(http: httpx.AsyncClient, ttl: float, **body: Any) -> dict[str, Any]:
    r = await http.post("/v1/leases", json={"ttl": ttl, **body})
    assert r.status_code == 201, r.text
    granted: dict[str, Any] = r.json()
    return granted


async def _all_pages(http: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = ""
    for _ in range(50):  # bounded: 50 pages is far more than any test makes
        r = await http.get("/v1/leases", params={**params, "cursor": cursor})
        assert r.status_code == 200, r.text
        page = r.json()
        items += page["items"]
        if page["next_cursor"] is None:
            return items
        cursor = page["next_cursor"]
    raise AssertionError("pages never ended")


async def test_pages_list_active_leases_soonest_expiry_first(api: Api) -> None:
    for i in range(7):
        await ready_proxy(api, f"ll{i}", port=4200 + i)
    ttls = [50, 10, 70, 30, 20, 60, 40]
    granted = [await _grant(api.client, ttl, holder=f"w{ttl}") for ttl in ttls]
    released = granted[3]  # the 30 s one ends now: no longer listed
    r = await api.client.post(
        f"/v1/leases/{released['lease_id']}/release", json={"epoch": released["epoch"]}
    )
    assert r.status_code == 200

    first = (await api.client.get("/v1/leases", params={"limit": 2})).json()
    assert len(first["items"]) == 2
    assert first["next_cursor"]
    listed = await _all_pages(api.client, limit=2)
    assert [item["holder"] for item in listed] == ["w10", "w20", "w40", "w50", "w60", "w70"]
    by_id = {g["lease_id"]: g for g in granted}
    for item in listed:
        assert item["state"] == "active"
        assert item["epoch"] == by_id[item["lease_id"]]["epoch"]
        assert item["proxy_id"] == by_id[item["lease_id"]]["proxy"]["id"]
        assert "password" not in str(item)


async def test_a_client_lists_its_own_leases_and_an_admin_all(api: Api) -> None:
    for i in range(3):
        await ready_proxy(api, f"lo{i}", port=4300 + i)
    mine = await _grant(api.client, 30)
    theirs = await _grant(api.other, 30)
    admins = await _grant(api.admin, 30)
    assert [i["lease_id"] for i in await _all_pages(api.client)] == [mine["lease_id"]]
    assert [i["lease_id"] for i in await _all_pages(api.other)] == [theirs["lease_id"]]
    assert {i["lease_id"] for i in await _all_pages(api.admin)} == {
        mine["lease_id"],
        theirs["lease_id"],
        admins["lease_id"],
    }


async def test_the_lease_of_one_proxy(api: Api) -> None:
    await ready_proxy(api, "lp1", port=4401)
    await ready_proxy(api, "lp2", port=4402)
    lease = await _grant(api.client, 30, proxy_id="lp2")
    r = await api.client.get("/v1/leases", params={"proxy_id": "lp2"})
    assert [i["lease_id"] for i in r.json()["items"]] == [lease["lease_id"]]
    r = await api.client.get("/v1/leases", params={"proxy_id": "lp1"})
    assert r.json() == {"items": [], "next_cursor": None}
    r = await api.other.get("/v1/leases", params={"proxy_id": "lp2"})
    assert r.json()["items"] == []  # another client's lease is not shown


async def test_a_malformed_cursor_is_400(api: Api) -> None:
    r = await api.client.get("/v1/leases", params={"cursor": "page-two"})
    assert r.status_code == 400
    assert "cursor" in r.json()["message"]
    assert error_of(r)
    r = await api.anon.get("/v1/leases")
    assert r.status_code == 401


async def test_leases_ending_at_the_same_time_are_each_listed_once(api: Api) -> None:
    """The clock stands still: five leases share one expiry, and pages of two split them."""
    for i in range(5):
        await ready_proxy(api, f"lt{i}", port=4500 + i)
    granted = {(await _grant(api.client, 30))["lease_id"] for _ in range(5)}
    listed = [i["lease_id"] for i in await _all_pages(api.client, limit=2)]
    assert sorted(listed) == sorted(granted)
