"""CustomResourceDefinitions in the fake API server, through the real client: a CRD (the
ProxyPool one deploy/ ships) served at once, with discovery; its resources checked against
the structural schema (pruned unknown fields, 422 causes worded as the server's)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.custom_resources import (
    GROUP,
    NS,
    PLURAL,
    VERSION,
    Api,
    create,
    extensions,
    get_json,
    pool,
    status_of,
)
from tests.k8s.fake_kube import FakeKube

from proxyfleet.pool_operator import crd


def test_a_crd_is_established_and_discovered(
    fake_api: FakeKube, api_client: client.ApiClient
) -> None:
    assert [g["name"] for g in get_json(api_client, "/apis")["groups"]] == ["apiextensions.k8s.io"]
    with pytest.raises(ApiException) as gone:
        client.CustomObjectsApi(api_client).list_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL
        )
    assert gone.value.status == 404
    ext = extensions(api_client)
    made = ext.create_custom_resource_definition(crd.crd())
    conditions = {c.type: c.status for c in made.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert made.status.stored_versions == [VERSION]
    groups = {g["name"]: g for g in get_json(api_client, "/apis")["groups"]}
    assert groups[GROUP]["preferredVersion"]["groupVersion"] == crd.API_VERSION
    resources = get_json(api_client, f"/apis/{GROUP}/{VERSION}")["resources"]
    by_name = {r["name"]: r for r in resources}
    assert set(by_name) == {PLURAL, f"{PLURAL}/status", f"{PLURAL}/scale"}
    assert by_name[PLURAL]["shortNames"] == crd.SHORT_NAMES
    assert by_name[PLURAL]["namespaced"] is True
    assert by_name[f"{PLURAL}/scale"]["kind"] == "Scale"
    assert [c.metadata.name for c in ext.list_custom_resource_definition().items] == [crd.NAME]


def test_a_crd_the_fake_cannot_check_in_full_is_refused(api_client: client.ApiClient) -> None:
    body = crd.crd()
    schema = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["anyOf"] = [{"required": ["size"]}]
    body["metadata"]["name"] = "pools.proxyfleet.io"
    with pytest.raises(ApiException) as exc:
        extensions(api_client).create_custom_resource_definition(body)
    assert exc.value.status == 422
    message = status_of(exc)["message"]
    assert 'must be spec.names.plural+"."+spec.group' in message
    assert "spec: anyOf" in message


def test_create_fills_in_metadata_drops_status_and_prunes_unknown_fields(
    fake_api: FakeKube, custom: Api
) -> None:
    body = pool(sise=3, autoscale={"min": 1, "max": 4, "extra": True})
    body["status"] = {"ready": 9}
    made, _, headers = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, NS, PLURAL, body
    )
    assert made["metadata"]["generation"] == 1
    assert made["metadata"]["namespace"] == NS
    assert made["metadata"]["uid"]
    assert "status" not in made
    assert made["spec"] == {"provider": "local", "size": 2, "autoscale": {"min": 1, "max": 4}}
    warning = headers["Warning"]
    assert 'unknown field \\"spec.autoscale.extra\\"' in warning
    assert 'unknown field \\"spec.sise\\"' in warning
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
    assert (listed["kind"], listed["apiVersion"]) == ("ProxyPoolList", crd.API_VERSION)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["eu"]
    assert fake_api.objects(f"{PLURAL}.{GROUP}", NS)[0]["spec"]["size"] == 2


def test_strict_field_validation_refuses_an_unknown_field(custom: Api) -> None:
    with pytest.raises(ApiException) as exc:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL, pool(sise=3), field_validation="Strict"
        )
    assert exc.value.status == 400
    assert status_of(exc)["message"] == 'strict decoding error: unknown field "spec.sise"'


@pytest.mark.parametrize(
    ("name", "spec", "field", "message"),
    [
        ("eu", {"size": "3"}, "spec.size",
         'Invalid value: "string": spec.size in body must be of type integer: "string"'),
        ("eu", {"size": 10001}, "spec.size",
         "Invalid value: 10001: spec.size in body should be less than or equal to 10000"),
        ("eu", {"max_age": 0}, "spec.max_age",
         "Invalid value: 0: spec.max_age in body should be greater than 0"),
        ("eu", {"provider": "Local"}, "spec.provider",
         "Invalid value: \"Local\": spec.provider in body should match '^[a-z][a-z0-9-]{0,30}$'"),
        ("eu", {"autoscale": {"min": 1}}, "spec.autoscale.max", "Required value"),
        ("eu", {"zones": "local-a"}, "spec.zones",
         'Invalid value: "string": spec.zones in body must be of type array: "string"'),
        ("eu", {"max_surge": None}, "spec.max_surge",
         'Invalid value: "null": spec.max_surge in body must be of type integer: "null"'),
        ("Eu-", {}, "metadata.name", "spec"),
    ],
)  # fmt: skip
def test_the_schema_refuses_bad_values_naming_the_field(
    custom: Api, name: str, spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiException) as exc:
        create(custom, pool(name, **spec))
    assert exc.value.status == 422
    got = status_of(exc)
    assert got["reason"] == "Invalid"
    assert got["details"]["group"] == GROUP
    causes = {c["field"]: c["message"] for c in got["details"]["causes"]}
    if field == "metadata.name":  # both the fake's name rule and the CRD's pattern
        assert got["message"].startswith(f'ProxyPool.{GROUP} "{name}" is invalid')
        assert "metadata.name" in causes
        return
    assert causes == {field: message}
    assert got["message"] == f'ProxyPool.{GROUP} "{name}" is invalid: {field}: {message}'


def test_null_is_kept_where_the_schema_allows_it(custom: Api) -> None:
    made = create(custom, pool(autoscale=None, size=None))
    assert made["spec"] == {"provider": "local", "size": None, "autoscale": None}
