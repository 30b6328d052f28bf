"""Health, readiness, metrics and the OpenAPI document: no token needed."""

from __future__ import annotations

import asyncio

import httpx
from tests.api.helpers import PROVIDER, Api, ApiFactory, error_of, ready_proxy

from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.devstack.servers import free_port


async def test_healthz_needs_no_token(api: Api) -> None:
    r = await api.anon.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


async def test_readyz_checks_redis_nats_and_the_outbox_relay(api: Api) -> None:
    r = await wait_ready(api)
    assert r.status_code == 200, r.text
    assert r.json()["redis"] is True
    assert r.json()["nats"] is True
    assert r.json()["outbox"] is True

    await api.services.backends.nats.close()
    r = await api.anon.get("/readyz")
    assert r.status_code == 503
    assert error_of(r) == "not_ready"
    assert r.json()["nats"] is False
    assert r.json()["outbox"] is False  # the relay cannot publish without NATS
    assert "nats" in r.json()["message"]


async def wait_ready(api: Api, within: float = 5.0) -> httpx.Response:
    """/readyz once the relay has read the outbox for the first time (right after start)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        r = await api.anon.get("/readyz")
        if r.status_code == 200 or asyncio.get_running_loop().time() > deadline:
            return r
        await asyncio.sleep(0.05)


async def test_metrics_exposes_lease_and_request_metrics(api: Api) -> None:
    await ready_proxy(api, "pmetrics1")
    assert (await api.client.post("/v1/leases", json={"ttl": 30})).status_code == 201
    assert (await api.client.post("/v1/leases", json={"ttl": 30})).status_code == 503

    r = await api.anon.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    for name in (
        "proxyfleet_leases_granted_total",
        "proxyfleet_leases_released_total",
        "proxyfleet_leases_expired_total",
        "proxyfleet_lease_conflicts_total",
        "proxyfleet_lease_unavailable_total",
    ):
        assert f"\n{name} " in text, name
    assert (
        'proxyfleet_api_request_seconds_count{method="POST",route="/v1/leases",status="201"}'
        in text
    )
    assert (
        'proxyfleet_api_request_seconds_count{method="POST",route="/v1/leases",status="503"}'
        in text
    )
    assert f'proxyfleet_registry_proxies{{phase="ready",provider="{PROVIDER}"}} 1.0' in text


async def test_openapi_document_is_served_without_token(api: Api) -> None:
    r = await api.anon.get("/schema/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    paths = doc["paths"]
    for path in (
        "/v1/proxies",
        "/v1/proxies/{proxy_id}",
        "/v1/leases",
        "/v1/leases/{lease_id}",
        "/v1/leases/{lease_id}/renew",
        "/v1/leases/{lease_id}/report",
        "/v1/leases/{lease_id}/release",
        "/v1/providers",
        "/healthz",
        "/readyz",
    ):
        assert path in paths, path
    assert "bearer" in doc["components"]["securitySchemes"]
    assert paths["/v1/leases"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in paths["/healthz"]["get"]
    body = paths["/v1/leases"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/GrantLease"}
    grant = doc["components"]["schemas"]["GrantLease"]["properties"]
    assert {"ttl", "holder", "target", "proxy_id", "provider", "zone", "labels"} <= set(grant)
    assert "409" in paths["/v1/leases"]["post"]["responses"]
    assert "password" not in doc["components"]["schemas"]["ProxyOut"]["properties"]


async def test_oversized_body_is_413(api: Api) -> None:
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "x": "a" * (2 << 20)})
    assert r.status_code == 413
    assert error_of(r) == "payload_too_large"


async def test_unknown_route_is_a_json_404(api: Api) -> None:
    r = await api.admin.get("/v2/nothing")
    assert r.status_code == 404
    assert error_of(r) == "not_found"
    r = await api.admin.put("/v1/proxies")
    assert r.status_code == 405
    assert error_of(r) == "method_not_allowed"


async def test_redis_down_at_start_is_503_json_not_500(
    start_api: ApiFactory, nats_url: str
) -> None:
    """The API serves while it keeps trying Redis: every route 503 with Retry-After."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    api = await start_api(common=CommonSettings(redis_url=dead, nats_url=nats_url))
    r = await api.admin.get("/v1/proxies")
    assert r.status_code == 503, r.text
    assert error_of(r) == "unavailable"
    assert "connecting" in r.json()["message"]
    r = await api.client.post("/v1/leases", json={})
    assert r.status_code == 503
    assert r.headers["retry-after"] == "1"
    r = await api.anon.get("/readyz")
    assert r.status_code == 503
    assert r.json()["redis"] is False
    assert (await api.anon.get("/metrics")).status_code == 200
