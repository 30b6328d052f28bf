"""Bodies no client should send: each is a 4xx JSON error, never a 500."""

from __future__ import annotations

import re

import pytest
from litestar.routes import HTTPRoute
from tests.api.helpers import Api, error_of

from proxyfleet.api.http.errors import EXCEPTION_HANDLERS, TOO_DEEP

DEPTH = 1000
"""About 2 KB of brackets: deeper than the interpreter's recursion limit lets msgspec go."""

DEEP_BODIES = {
    "arrays": b"[" * DEPTH + b"]" * DEPTH,
    "objects": b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
}

BODY_METHODS = {"POST", "PUT", "PATCH"}


def routes_with_a_body(api: Api) -> list[tuple[str, str]]:
    """(method, path) of every route that takes a body, path parameters filled in."""
    found = []
    for route in api.app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for method in sorted(BODY_METHODS & set(route.methods)):
            found.append((method, re.sub(r"\{[^}]+\}", "some-id", route.path)))
    return found


async def test_every_route_with_a_body_is_covered(api: Api) -> None:
    routes = routes_with_a_body(api)
    assert ("POST", "/v1/proxies") in routes
    assert ("POST", "/v1/leases") in routes
    assert ("POST", "/v1/leases/some-id/renew") in routes
    assert ("POST", "/v1/leases/some-id/report") in routes
    assert ("POST", "/v1/leases/some-id/release") in routes
    assert ("PUT", "/v1/pools/some-id") in routes
    assert ("PATCH", "/v1/pools/some-id") in routes
    assert ("POST", "/v1/proxies/some-id/quarantine") in routes


@pytest.mark.parametrize("shape", sorted(DEEP_BODIES))
async def test_a_deeply_nested_body_is_a_400_on_every_route(api: Api, shape: str) -> None:
    body = DEEP_BODIES[shape]
    for method, path in routes_with_a_body(api):
        r = await api.admin.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code == 400, (method, path, r.text)
        assert error_of(r) == "bad_request", (method, path, r.text)
        assert r.json()["message"] == TOO_DEEP
    # the server is still fine afterwards
    assert (await api.admin.get("/v1/proxies")).status_code == 200


async def test_a_moderately_nested_body_is_an_ordinary_validation_error(api: Api) -> None:
    nested = b'{"provider": "apitest", "labels": ' + b"[" * 50 + b"]" * 50 + b"}"
    r = await api.admin.post(
        "/v1/proxies", content=nested, headers={"content-type": "application/json"}
    )
    assert r.status_code == 400, r.text
    assert error_of(r) == "invalid_input"
    assert "labels" in r.json()["message"]


def _recurse_forever(n: int) -> int:
    return _recurse_forever(n + 1) + 1


def test_a_recursion_error_of_our_own_stays_a_500() -> None:
    with pytest.raises(RecursionError) as info:
        _recurse_forever(0)
    handler = EXCEPTION_HANDLERS[RecursionError]
    response = handler(None, info.value)  # type: ignore[arg-type]
    assert response.status_code == 500
