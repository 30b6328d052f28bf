"""POST/GET/DELETE /v1/providers/{name}/proxies against a real Redis: each status and
body, admin only, and passwords masked in every answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from tests.api.entry_type import LEAKY_HOST, LISTED, listed_providers
from tests.api.helpers import Api, ApiFactory, error_of, snapshot

from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import AddedEntry, ProviderEntries

PASSWORD = "Pa55-w0rd-of-the-entry"
URL = f"socks5://alice:{PASSWORD}@127.9.8.7:1080"
MASKED = "socks5://alice:***@127.9.8.7:1080"
ENTRIES = f"/v1/providers/{LISTED}/proxies"


@pytest.fixture
def listed() -> Iterator[ProvidersConfig]:
    with listed_providers() as config:
        yield config


@pytest.fixture
async def api(start_api: ApiFactory, listed: ProvidersConfig) -> Api:
    return await start_api(providers=listed)


@pytest.fixture
def stored(redis_client: aioredis.Redis) -> ProviderEntries:
    return ProviderEntries(redis_client)


async def _before(api: Api, redis_client: aioredis.Redis) -> dict[str, Any]:
    """The store before a refused request. The outbox relay creates its stream when it
    first runs, which may be after the app answers: created here first (idempotent)."""
    await api.registry.outbox.ensure_group()
    return await snapshot(redis_client)


def _no_password(body: Any) -> None:
    assert PASSWORD not in repr(body)


async def test_an_added_entry_is_stored_and_answered_masked(
    api: Api, stored: ProviderEntries
) -> None:
    body = {"url": URL, "zone": "l2", "labels": {"tier": "a"}, "name": "alice-1"}
    r = await api.admin.post(ENTRIES, json=body)
    assert r.status_code == 201, r.text
    out = r.json()
    assert set(out) == {"id", "url", "zone", "labels", "name"}
    assert (out["url"], out["zone"], out["labels"], out["name"]) == (
        MASKED,
        "l2",
        {"tier": "a"},
        "alice-1",
    )
    assert out["id"].startswith("s")
    _no_password(r.text)
    assert await stored.entries(LISTED) == {
        out["id"]: AddedEntry(line=URL, zone="l2", labels={"tier": "a"}, name="alice-1")
    }
    assert await stored.version(LISTED) >= 1


async def test_line_is_the_other_name_of_url_and_zone_defaults(
    api: Api, stored: ProviderEntries
) -> None:
    r = await api.admin.post(ENTRIES, json={"line": "http://127.0.0.1:3128"})
    assert r.status_code == 201, r.text
    assert (r.json()["url"], r.json()["zone"], r.json()["labels"], r.json()["name"]) == (
        "http://127.0.0.1:3128",
        "",
        {},
        "",
    )
    assert (await stored.entries(LISTED))[r.json()["id"]].zone == ""


async def test_the_same_entry_again_is_200_and_another_with_its_id_is_409(
    api: Api, redis_client: aioredis.Redis
) -> None:
    first = await api.admin.post(ENTRIES, json={"url": URL, "zone": "l1"})
    assert first.status_code == 201
    before = await _before(api, redis_client)
    again = await api.admin.post(ENTRIES, json={"url": URL, "zone": "l1"})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    changed = URL.replace(PASSWORD, "another-password")
    for other in ({"url": changed, "zone": "l1"}, {"url": URL, "zone": "l2"}, {"url": URL}):
        r = await api.admin.post(ENTRIES, json=other)
        assert r.status_code == 409, r.text
        assert error_of(r) == "entry_exists"
        assert first.json()["id"] in r.json()["message"]
        assert "another-password" not in r.text
        _no_password(r.text)
    after = await snapshot(redis_client)
    version = "pf:entries_ver:listed"
    assert {k: v for k, v in after.items() if k != version} == {
        k: v for k, v in before.items() if k != version
    }


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"url": f"ftp://bob:{PASSWORD}@127.0.0.1:21"}, "field url: unknown scheme 'ftp'"),
        ({"line": f"http://bob:{PASSWORD}@127.0.0.1:70000"}, "field line: port out of range"),
        ({"url": f"http://bob:{PASSWORD}@127.0.0.1"}, "field url: expected scheme://"),
    ],
)
async def test_a_bad_line_is_a_400_naming_the_problem_not_the_password(
    api: Api, stored: ProviderEntries, body: dict[str, str], where: str
) -> None:
    r = await api.admin.post(ENTRIES, json=body)
    assert r.status_code == 400, r.text
    assert error_of(r) == "invalid_entry"
    assert r.json()["message"].startswith(where), r.text
    _no_password(r.text)
    assert await stored.entries(LISTED) == {}


async def test_a_parser_message_holding_the_password_is_withheld(api: Api) -> None:
    r = await api.admin.post(ENTRIES, json={"url": f"http://bob:{PASSWORD}@{LEAKY_HOST}:80"})
    assert r.status_code == 400
    assert error_of(r) == "invalid_entry"
    assert r.json()["message"].startswith("field url: not a proxy line this provider takes")
    _no_password(r.text)


@pytest.mark.parametrize(
    ("body", "code", "text"),
    [
        ({}, "invalid_input", "give the proxy as `url` or as `line`"),
        ({"url": URL, "line": URL}, "invalid_input", "one of them"),
        ({"url": URL, "zone": "z9"}, "unknown_zone", "its zones: l1, l2"),
        ({"url": URL, "colour": "red"}, "invalid_input", "unknown field `colour`"),
        ({"url": URL, "labels": {"bad key!": "x"}}, "invalid_input", "`$.labels`"),
        ({"url": URL, "name": "a b"}, "invalid_input", "field name"),
        ({"url": ""}, "invalid_input", "field url"),
        ({"url": 3}, "invalid_input", "field url"),
    ],
)
async def test_a_bad_body_is_a_400_and_stores_nothing(
    api: Api, redis_client: aioredis.Redis, body: dict[str, Any], code: str, text: str
) -> None:
    before = await _before(api, redis_client)
    r = await api.admin.post(ENTRIES, json=body)
    assert r.status_code == 400, r.text
    assert error_of(r) == code
    assert text in r.json()["message"], r.text
    _no_password(r.text)
    assert await snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("POST", "/v1/providers/nope/proxies", 404, "unknown_provider"),
        ("GET", "/v1/providers/nope/proxies", 404, "unknown_provider"),
        ("DELETE", "/v1/providers/nope/proxies/s1", 404, "unknown_provider"),
        ("POST", "/v1/providers/plain/proxies", 409, "provider_takes_no_entries"),
        ("GET", "/v1/providers/plain/proxies", 409, "provider_takes_no_entries"),
        ("DELETE", "/v1/providers/plain/proxies/s1", 409, "provider_takes_no_entries"),
        ("GET", "/v1/providers/Bad_Name/proxies", 400, "invalid_input"),
        ("DELETE", f"{ENTRIES}/Not_An_Id", 400, "invalid_input"),
        ("DELETE", f"{ENTRIES}/s0123", 404, "entry_not_found"),
    ],
)
async def test_what_is_not_there_or_takes_no_entries(
    api: Api, method: str, path: str, status: int, code: str
) -> None:
    kwargs: dict[str, Any] = {"json": {"url": URL}} if method == "POST" else {}
    r = await api.admin.request(method, path, **kwargs)
    assert r.status_code == status, r.text
    assert error_of(r) == code
    _no_password(r.text)


async def test_the_listing_is_masked_and_by_id_and_delete_removes(
    api: Api, stored: ProviderEntries
) -> None:
    lines = [URL, f"https://bob:{PASSWORD}@[2001:db8::1]:8443", "http://127.0.0.2:3128"]
    ids = [(await api.admin.post(ENTRIES, json={"url": line})).json()["id"] for line in lines]
    r = await api.admin.get(ENTRIES)
    assert r.status_code == 200
    items = r.json()["items"]
    assert [i["id"] for i in items] == sorted(ids)
    assert {i["url"] for i in items} == {
        MASKED,
        "https://bob:***@[2001:db8::1]:8443",
        "http://127.0.0.2:3128",
    }
    _no_password(r.text)

    version = await stored.version(LISTED)
    gone = await api.admin.delete(f"{ENTRIES}/{ids[0]}")
    assert gone.status_code == 204, gone.text
    assert gone.content == b""
    assert await stored.version(LISTED) > version
    assert ids[0] not in await stored.entries(LISTED)
    assert [i["id"] for i in (await api.admin.get(ENTRIES)).json()["items"]] == sorted(ids[1:])
    again = await api.admin.delete(f"{ENTRIES}/{ids[0]}")
    assert again.status_code == 404
    assert error_of(again) == "entry_not_found"


async def test_a_stored_line_its_type_no_longer_reads_lists_as_stars(
    api: Api, stored: ProviderEntries
) -> None:
    await stored.add(LISTED, "sold", AddedEntry(line=f"gopher://u:{PASSWORD}@h:70"))
    r = await api.admin.get(ENTRIES)
    assert r.json()["items"] == [{"id": "sold", "url": "***", "zone": "", "labels": {}, "name": ""}]


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", ENTRIES), ("GET", ENTRIES), ("DELETE", f"{ENTRIES}/s0123")],
)
async def test_admin_only(api: Api, stored: ProviderEntries, method: str, path: str) -> None:
    kwargs: dict[str, Any] = {"json": {"url": URL}} if method == "POST" else {}
    r = await api.client.request(method, path, **kwargs)
    assert r.status_code == 403, r.text
    assert error_of(r) == "forbidden"
    r = await api.anon.request(method, path, **kwargs)
    assert r.status_code == 401
    assert error_of(r) == "unauthorized"
    assert await stored.entries(LISTED) == {}
