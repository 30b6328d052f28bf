"""Where the OpenAPI document and the API used to disagree: the 400 of a bad path
parameter, unknown body fields, integers written as 1.0, and 405 without Allow."""

from __future__ import annotations

from typing import Any

import pytest
from tests.api.helpers import PROVIDER, Api, error_of, ready_proxy

ERROR_BODY = {"$ref": "#/components/schemas/ErrorBody"}


async def _document(api: Api) -> dict[str, Any]:
    r = await api.anon.get("/schema/openapi.json")
    assert r.status_code == 200
    doc: dict[str, Any] = r.json()
    return doc


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "responses" in op
    ]


async def test_every_documented_error_has_the_error_body(api: Api) -> None:
    doc = await _document(api)
    seen = 0
    for method, path, op in _operations(doc):
        for status, response in op["responses"].items():
            if int(status) < 400 or path == "/readyz":  # /readyz's 503 is its report
                continue
            schema = response["content"]["application/json"]["schema"]
            assert schema == ERROR_BODY, (method, path, status, schema)
            seen += 1
    assert seen > 40


async def test_every_route_with_a_parameter_or_body_documents_its_400(api: Api) -> None:
    doc = await _document(api)
    for method, path, op in _operations(doc):
        if op.get("parameters") or op.get("requestBody"):
            assert "400" in op["responses"], (method, path)
        if path.startswith("/v1/"):
            assert {"401", "403", "503"} <= set(op["responses"]), (method, path)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/proxies/" + "a" * 65),
        ("DELETE", "/v1/proxies/" + "a" * 65),
        ("GET", "/v1/leases/" + "b" * 65),
        ("POST", "/v1/leases/" + "b" * 65 + "/release"),
    ],
)
async def test_a_bad_path_parameter_is_a_documented_400(api: Api, method: str, path: str) -> None:
    kwargs: dict[str, Any] = {"json": {"epoch": 1}} if method == "POST" else {}
    r = await api.admin.request(method, path, **kwargs)
    assert r.status_code == 400, r.text
    assert error_of(r) == "invalid_input"
    assert set(r.json()) == {"error", "message"}
    assert r.json()["message"].startswith("path parameter "), r.text


async def test_request_bodies_forbid_unknown_fields_in_the_document_too(api: Api) -> None:
    doc = await _document(api)
    bodies = [
        op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        for _, _, op in _operations(doc)
        if "application/json" in op.get("requestBody", {}).get("content", {})
    ]
    assert sorted(bodies) == [
        "AddProviderEntry",
        "CreateProxies",
        "GrantLease",
        "PoolSpec",
        "Quarantine",
        "ReleaseLease",
        "RenewLease",
        "ReportLease",
    ]
    for name in bodies:
        assert doc["components"]["schemas"][name]["additionalProperties"] is False, name
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "colour": "red"})
    assert r.status_code == 400
    assert "unknown field `colour`" in r.json()["message"]
    # a merge patch is any object: its unknown fields are refused once merged into the spec
    (patch,) = [op for m, p, op in _operations(doc) if (m, p) == ("PATCH", "/v1/pools/{name}")]
    merge = patch["requestBody"]["content"]["application/merge-patch+json"]["schema"]
    assert merge["type"] == "object"


async def test_the_document_keeps_the_bounds_the_api_applies(api: Api) -> None:
    schemas = (await _document(api))["components"]["schemas"]
    ttl = schemas["GrantLease"]["properties"]["ttl"]["anyOf"][0]
    assert ttl["exclusiveMinimum"] == 0
    labels = schemas["CreateProxies"]["properties"]["labels"]
    assert labels["maxProperties"] == 32
    assert "pattern" in labels["propertyNames"]
    assert schemas["CreateProxies"]["properties"]["count"]["type"] == "integer"
    assert schemas["ReportLease"]["properties"]["outcome"] == {
        "$ref": "#/components/schemas/LeaseOutcome"
    }
    # a refused zero TTL, as documented
    r = await api.client.post("/v1/leases", json={"ttl": 0})
    assert r.status_code == 400


async def test_an_integer_written_with_a_zero_fraction_is_that_integer(api: Api) -> None:
    """JSON Schema's integer is a number without a fraction: 2.0 is 2, in bodies and in
    query parameters alike; 1.5 is refused everywhere."""
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "count": 2.0})
    assert r.status_code == 202, r.text
    assert len(r.json()["items"]) == 2
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "count": 1.5})
    assert r.status_code == 400
    assert "field count" in r.json()["message"]
    assert (await api.admin.get("/v1/proxies?limit=2.0")).status_code == 200
    assert (await api.admin.get("/v1/proxies?limit=1.5")).status_code == 400

    await ready_proxy(api, "int1")
    grant = (await api.client.post("/v1/leases", json={"proxy_id": "int1"})).json()
    lease = grant["lease_id"]
    r = await api.client.post(f"/v1/leases/{lease}/renew", json={"epoch": 1.5})
    assert r.status_code == 400
    epoch = float(grant["epoch"])  # 1764...0.0: an integer written with a zero fraction
    r = await api.client.post(f"/v1/leases/{lease}/renew", json={"epoch": epoch, "ttl": 30})
    assert r.status_code == 200, r.text
    r = await api.client.delete(f"/v1/leases/{lease}?epoch={epoch}")
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/proxies", {"GET", "POST"}),
        ("PATCH", "/v1/proxies/p1", {"GET", "DELETE"}),
        ("PUT", "/v1/leases/l1", {"GET", "DELETE"}),
        ("GET", "/v1/leases/l1/renew", {"POST"}),
        ("POST", "/healthz", {"GET"}),
        ("DELETE", "/v1/providers", {"GET"}),
    ],
)
async def test_a_405_says_which_methods_are_allowed(
    api: Api, method: str, path: str, allowed: set[str]
) -> None:
    r = await api.admin.request(method, path)
    assert r.status_code == 405
    assert error_of(r) == "method_not_allowed"
    listed = {m.strip() for m in r.headers["allow"].split(",")}
    assert allowed <= listed, listed
    assert method not in listed


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/v1/proxies", "GET, HEAD, OPTIONS, POST"),
        ("/v1/proxies/p1", "DELETE, GET, HEAD, OPTIONS"),
        ("/v1/leases", "GET, HEAD, OPTIONS, POST"),
        ("/v1/leases/l1", "DELETE, GET, HEAD, OPTIONS"),
        ("/healthz", "GET, HEAD, OPTIONS"),
    ],
)
async def test_options_lists_every_method_of_the_path(api: Api, path: str, allowed: str) -> None:
    """Litestar 2's own OPTIONS listed only the first handler's methods (litestar#4169)."""
    r = await api.admin.options(path)
    assert r.status_code == 204
    assert r.headers["allow"] == allowed


async def test_every_operation_is_described_and_every_409_503_documents_retry_after(
    api: Api,
) -> None:
    doc = await _document(api)
    ops = _operations(doc)
    assert len(ops) > 10
    for method, path, op in ops:
        assert op.get("description", "").strip(), (method, path)
        for status in ("201", "202"):  # not Litestar's default "Document created, URL follows"
            if status in op["responses"]:
                assert "URL follows" not in op["responses"][status]["description"], (method, path)
                assert "off-line" not in op["responses"][status]["description"], (method, path)
        for status in ("409", "503"):
            if status in op["responses"]:
                header = op["responses"][status]["headers"]["Retry-After"]
                assert header["schema"] == {"type": "integer", "minimum": 1}, (method, path)
