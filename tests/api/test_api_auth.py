"""Bearer tokens with two scopes; no token and no --insecure-dev: the API refuses to start."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from tests.api.helpers import (
    ADMIN,
    CLIENT,
    PROVIDER,
    Api,
    ApiFactory,
    api_settings,
    error_of,
    providers_config,
)

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.api.http.auth import Principal, Scope, TokenAuth
from proxyfleet.common.core.errors import ConfigError


async def test_missing_or_unknown_token_is_401_json(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {ADMIN}"}):
        for method, path in (
            ("GET", "/v1/proxies"),
            ("POST", "/v1/leases"),
            ("GET", "/v1/providers"),
        ):
            r = await api.anon.request(method, path, headers=headers, json={})
            assert r.status_code == 401, (method, path, headers)
            assert error_of(r) == "unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")


async def test_client_scope_is_leases_and_providers_only(api: Api) -> None:
    assert (await api.client.get("/v1/providers")).status_code == 200
    assert (await api.client.get("/v1/leases/l-none")).status_code == 404
    for method, path in (
        ("GET", "/v1/proxies"),
        ("GET", "/v1/proxies/p1"),
        ("POST", "/v1/proxies"),
        ("DELETE", "/v1/proxies/p1"),
    ):
        r = await api.client.request(method, path, json={"provider": PROVIDER})
        assert r.status_code == 403, (method, path)
        assert error_of(r) == "forbidden"
        assert "admin scope" in r.json()["message"]


async def test_admin_scope_is_everything(api: Api) -> None:
    assert (await api.admin.get("/v1/proxies")).status_code == 200
    assert (await api.admin.get("/v1/providers")).status_code == 200
    assert (await api.admin.post("/v1/leases", json={})).status_code == 503


A1, A2, C1 = "a1-secret-0123456789", "a2-secret-0123456789", "c1-secret-0123456789"


async def test_several_tokens_per_scope(start_api: ApiFactory) -> None:
    api = await start_api(admin_tokens=(f"a1:{A1}", f"a2:{A2}"), client_tokens=(f"c1:{C1}",))
    for token, status in ((A1, 200), (A2, 200), (C1, 403), (ADMIN, 401)):
        r = await api.anon.get("/v1/proxies", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == status, token


async def test_insecure_dev_serves_without_token(start_api: ApiFactory) -> None:
    api = await start_api(admin_tokens=(), client_tokens=(), insecure_dev=True)
    assert (await api.anon.get("/v1/proxies")).status_code == 200
    assert (await api.anon.post("/v1/leases", json={})).status_code == 503


def test_no_token_and_not_insecure_refuses_to_build(redis_url: str, nats_url: str) -> None:
    settings = api_settings(redis_url, nats_url, admin_tokens=(), client_tokens=())
    with pytest.raises(ConfigError, match="no API token configured"):
        create_app(settings, AppDeps(providers=providers_config()))
    blank = dataclasses.replace(settings, admin_tokens=(" ",))
    with pytest.raises(ConfigError, match="blank"):
        create_app(blank, AppDeps(providers=providers_config()))


def test_token_scopes_and_names() -> None:
    auth = TokenAuth((f"ops:{A1}",), (f"crawler:{C1}",), insecure=False)
    assert auth.principal_of(A1) == Principal("ops", Scope.ADMIN)
    assert auth.principal_of(C1) == Principal("crawler", Scope.CLIENT)
    assert auth.scope_of(A1) is Scope.ADMIN
    assert auth.scope_of("") is None
    assert auth.scope_of(A1 + " ") is None
    assert auth.scope_of(f"ops:{A1}") is None  # the bearer is the secret alone
    assert auth.scope_of("é") is None
    assert auth.names(Scope.CLIENT) == ["crawler"]


async def test_system_routes_need_no_token(api: Api) -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/schema/openapi.json"):
        r = await api.anon.get(path)
        assert r.status_code == 200, path


async def test_non_ascii_token_is_401_not_500(api: Api) -> None:
    r = await api.anon.get("/v1/proxies", headers=[(b"authorization", "Bearer é".encode())])
    assert r.status_code == 401
    assert isinstance(r, httpx.Response)
    assert CLIENT not in r.text
