"""The lease fast path (proxyfleet.api.fastpath) answers exactly as Litestar does: each
request is sent with the fast path on and with it off (Litestar alone), and the two
answers compared (status, headers but Date, body); the requests it is meant to serve do
not reach Litestar at all (the others it hands over)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from tests.api.helpers import CLIENT, Api, ApiFactory, error_of, ready_proxy

from proxyfleet.api.app import ApiApp

Answer = tuple[int, list[tuple[str, str]], bytes]


def answer_of(r: httpx.Response) -> Answer:
    headers = [(k, v) for k, v in r.headers.multi_items() if k.lower() != "date"]
    return r.status_code, headers, r.content


def _app(api: Api) -> ApiApp:
    assert isinstance(api.app, ApiApp)
    return api.app


async def both(api: Api, send: Callable[[], Awaitable[httpx.Response]]) -> tuple[Answer, Answer]:
    """`send`'s answer with the fast path, then without it."""
    app = _app(api)
    fast = answer_of(await send())
    kept, app.fast_path = app.fast_path, None
    try:
        slow = answer_of(await send())
    finally:
        app.fast_path = kept
    return fast, slow


def litestar_calls(api: Api, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the fast path's requests it hands to Litestar from now on."""
    app = _app(api)
    seen: list[str] = []
    serve = app._litestar  # counting what reaches Litestar

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope.get("path", ""))
        await serve(scope, receive, send)

    monkeypatch.setattr(app, "_litestar", counting)
    return seen


def post(api: Api, path: str, content: bytes | str, **headers: str) -> httpx.Request:
    base = {"Authorization": f"Bearer {CLIENT}", "Content-Type": "application/json"}
    return httpx.Request("POST", api.url + path, content=content, headers={**base, **headers})


REFUSED_GRANTS: list[tuple[str, bytes | str, dict[str, str]]] = [
    ("no token", "{}", {"Authorization": ""}),
    ("unknown token", "{}", {"Authorization": "Bearer nope"}),
    ("not a bearer", "{}", {"Authorization": f"Basic {CLIENT}"}),
    ("not JSON", "{nope", {}),
    ("empty body", "", {}),
    ("a list", "[]", {}),
    ("null", "null", {}),
    ("unknown field", '{"holder": "h", "colour": "red"}', {}),
    ("a string for a number", '{"ttl": "3"}', {}),
    ("ttl 0", '{"ttl": 0}', {}),
    ("integral float label", '{"labels": {"a": 1.0}}', {}),
    ("bad selector", '{"provider": "Bad_Name"}', {}),
    ("unknown provider", '{"provider": "nosuch"}', {}),
    ("unknown zone", '{"provider": "apitest", "zone": "nowhere"}', {}),
    ("unknown pool", '{"pool": "nopool"}', {}),
    ("none ready", '{"holder": "h"}', {}),
    ("nested deep", '{"labels": ' + "[" * 5000 + "]" * 5000 + "}", {}),
    ("too large", '{"holder": "' + "x" * (1 << 20) + '"}', {}),
    ("key with a space", '{"holder": "h"}', {"Idempotency-Key": "a b"}),
    ("key too long", '{"holder": "h"}', {"Idempotency-Key": "k" * 256}),
    ("text/plain", '{"provider": "nosuch"}', {"Content-Type": "text/plain"}),
    ("no content type", '{"provider": "nosuch"}', {"Content-Type": ""}),
]


@pytest.mark.parametrize(
    ("body", "headers"),
    [(b, h) for _, b, h in REFUSED_GRANTS],
    ids=[name for name, _, _ in REFUSED_GRANTS],
)
async def test_a_refused_grant_is_answered_as_litestar_does(
    api: Api, body: bytes | str, headers: dict[str, str]
) -> None:
    async def send() -> httpx.Response:
        return await api.anon.send(post(api, "/v1/leases", body, **headers))

    fast, slow = await both(api, send)
    assert fast[0] >= 400
    assert fast == slow


async def test_a_taken_proxy_is_a_409_with_retry_after_as_litestar_says(api: Api) -> None:
    await ready_proxy(api, "fp1")
    r = await api.client.post("/v1/leases", json={"proxy_id": "fp1"})
    assert r.status_code == 201, r.text

    async def send() -> httpx.Response:
        return await api.anon.send(post(api, "/v1/leases", '{"proxy_id": "fp1"}'))

    fast, slow = await both(api, send)
    assert fast[0] == 409
    assert ("retry-after", "60") in fast[1]  # until the lease ends
    assert fast == slow


async def test_a_granted_lease_is_answered_as_litestar_does(api: Api) -> None:
    """The same Idempotency-Key answers with the same lease, so the two answers can be
    compared byte for byte; a grant without a key is checked field by field."""
    await ready_proxy(api, "fp2", port=4002)
    body = json.dumps({"holder": "h", "ttl": 5000, "target": "Example.com", "labels": {}})

    async def send() -> httpx.Response:
        return await api.anon.send(post(api, "/v1/leases", body, **{"Idempotency-Key": "k-1"}))

    fast, slow = await both(api, send)
    assert fast[0] == 201
    assert fast == slow
    assert json.loads(fast[2])["proxy"]["url"] == "http://user:s3cret-pass@127.0.0.1:4002"


async def test_a_release_is_answered_as_litestar_does(api: Api) -> None:
    await ready_proxy(api, "fp3")
    await ready_proxy(api, "fp4")
    leases = [(await api.client.post("/v1/leases", json={})).json() for _ in range(2)]
    answers = []
    app = _app(api)
    kept = app.fast_path
    for lease, fast_path in zip(leases, (kept, None), strict=True):
        app.fast_path = fast_path
        lid, epoch = lease["lease_id"], lease["epoch"]
        r = await api.client.post(f"/v1/leases/{lid}/release", json={"epoch": epoch})
        assert r.status_code == 200, r.text
        status, headers, content = answer_of(r)
        answers.append(
            (status, headers, content.replace(lid.encode(), b"L").replace(b"fp4", b"fp3"))
        )
    app.fast_path = kept
    assert answers[0] == answers[1]


async def test_a_refused_release_is_answered_as_litestar_does(api: Api) -> None:
    await ready_proxy(api, "fp5")
    lease = (await api.client.post("/v1/leases", json={})).json()
    lid, epoch = lease["lease_id"], lease["epoch"]
    cases = [
        (f"/v1/leases/{lid}/release", json.dumps({"epoch": epoch + 1}), {}),  # stale: 409
        (f"/v1/leases/{lid}/release", json.dumps({"epoch": epoch}), {"Authorization": ""}),
        ("/v1/leases/nosuch/release", '{"epoch": 1}', {}),  # 404
        ("/v1/leases/nosuch/release", '{"epoch": 1.0}', {}),  # an integer, as JSON Schema says
        ("/v1/leases/nosuch/release", '{"epoch": 0}', {}),
        ("/v1/leases/nosuch/release", '{"epoch": true}', {}),
        ("/v1/leases/nosuch/release", "{}", {}),
        ("/v1/leases/" + "x" * 65 + "/release", '{"epoch": 1}', {}),
        ("/v1/leases/a%2Fb/release", '{"epoch": 1}', {}),
        ("/v1/leases/nosuch/release?epoch=1", '{"epoch": 1}', {}),
        ("/v1/leases/nosuch/release/", '{"epoch": 1}', {}),
    ]
    for path, body, headers in cases:

        async def send(path: str = path, body: str = body, h: dict[str, str] = headers) -> Any:
            return await api.anon.send(post(api, path, body, **h))

        fast, slow = await both(api, send)
        assert fast[0] >= 400, path
        assert fast == slow, (path, body)
    # another client's lease is a 404, for the fast path as for Litestar
    r = await api.other.post(f"/v1/leases/{lid}/release", json={"epoch": epoch})
    assert (r.status_code, error_of(r)) == (404, "not_found")


async def test_grants_and_releases_skip_litestar(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    await ready_proxy(api, "fp6")
    seen = litestar_calls(api, monkeypatch)
    r = await api.client.post("/v1/leases", json={"holder": "h"}, headers={"Idempotency-Key": "k"})
    assert r.status_code == 201
    lease = r.json()
    r = await api.client.post(
        f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
    )
    assert r.status_code == 200
    r = await api.client.post("/v1/leases", json={"holder": "h"})  # cooling down: 503
    assert r.status_code == 503
    assert seen == []
    r = await api.client.post("/v1/leases", json={"holder": 1})
    assert r.status_code == 400
    assert seen == ["/v1/leases"]
    labels = {"route": "/v1/leases", "method": "POST", "status": "201"}
    assert REGISTRY.get_sample_value("proxyfleet_api_request_seconds_count", labels)
    labels = {"route": "/v1/leases/{lease_id:str}/release", "method": "POST", "status": "200"}
    assert REGISTRY.get_sample_value("proxyfleet_api_request_seconds_count", labels)


async def test_without_auth_every_caller_is_the_insecure_admin(
    start_api: ApiFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = await start_api(admin_tokens=(), client_tokens=(), insecure_dev=True)
    await ready_proxy(api, "fp7")
    seen = litestar_calls(api, monkeypatch)
    r = await api.anon.post("/v1/leases?ignored=1", json={})
    assert r.status_code == 201, r.text
    lease = r.json()
    r = await api.anon.get(f"/v1/leases/{lease['lease_id']}")
    assert r.json()["client"] == "insecure-dev"
    r = await api.anon.post(
        f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
    )
    assert r.status_code == 200, r.text
    assert seen == []
