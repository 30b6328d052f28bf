"""CustomResourceDefinitions in the fake API server, through the real client: a CRD (the
ProxyPool one deploy/ ships) served at once, with discovery; its resources checked against
the structural schema (pruned unknown fields, 422 causes worded as the server's), the
status and scale subresources, generations, finalizers, watch; Events posted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.conftest import new_watch, wait_for
from tests.k8s.fake_kube import FakeKube

from proxyfleet.pool_operator import crd

NS = "team-a"
GROUP, VERSION, PLURAL = crd.GROUP, crd.VERSION, crd.PLURAL
Api = Any
"""The client's CustomObjectsApi, read untyped (its answers are plain JSON)."""


@pytest.fixture
def fake_api() -> Iterator[FakeKube]:
    """A fake with no pod to run (no target needed): CRDs and their resources only."""
    made = FakeKube().start()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def api_client(fake_api: FakeKube) -> Iterator[client.ApiClient]:
    made = client.ApiClient(fake_api.configuration())
    try:
        yield made
    finally:
        made.close()  # type: ignore[no-untyped-call]


def extensions(api_client: client.ApiClient) -> Api:
    """The client's ApiextensionsV1Api, untyped: it takes the CRD as plain JSON."""
    return client.ApiextensionsV1Api(api_client)


@pytest.fixture
def custom(api_client: client.ApiClient) -> Api:
    extensions(api_client).create_custom_resource_definition(crd.crd())
    return client.CustomObjectsApi(api_client)


def pool(name: str = "eu", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": crd.API_VERSION,
        "kind": crd.KIND,
        "metadata": {"name": name},
        "spec": {"provider": "local", "size": 2, **spec},
    }


def create(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = api.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)
    return made


def status_of(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.value.body or "{}")
    return body


def get_json(api_client: client.ApiClient, path: str) -> Any:
    resp = httpx.get(api_client.configuration.host + path, timeout=10)
    resp.raise_for_status()
    return resp.json()


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


def test_the_status_subresource_owns_the_status_and_generation_counts_spec_changes(
    custom: Api,
) -> None:
    create(custom, pool())
    after = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        NS,
        PLURAL,
        "eu",
        {"status": {"ready": 5}, "metadata": {"labels": {"a": "b"}}},
    )
    assert "status" not in after  # the main resource ignores a status
    assert after["metadata"]["generation"] == 1  # metadata is no spec change
    status = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "eu", {"status": {"ready": 1}, "spec": {"size": 7}}
    )
    assert (status["status"], status["spec"]["size"]) == ({"ready": 1}, 2)
    assert status["metadata"]["generation"] == 1
    put = custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "eu", {**status, "status": {"ready": 1, "leased": 1}}
    )
    assert put["status"] == {"ready": 1, "leased": 1}
    status = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "eu", {"status": {"leased": None}}
    )
    assert status["status"] == {"ready": 1}
    with pytest.raises(ApiException) as bad:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, NS, PLURAL, "eu", {"status": {"conditions": [{"type": "Ready",
                                                                          "status": "Maybe"}]}}
        )  # fmt: skip
    assert bad.value.status == 422
    assert 'supported values: "False", "True", "Unknown"' in status_of(bad)["message"]
    changed = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "eu", {"spec": {"size": 3}}
    )
    assert (changed["metadata"]["generation"], changed["status"]) == (2, {"ready": 1})
    replaced = custom.replace_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "eu", {**changed, "spec": {"provider": "local", "size": 4}}
    )
    assert replaced["metadata"]["generation"] == 3
    with pytest.raises(ApiException) as stale:
        custom.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "eu", changed)
    assert stale.value.status == 409


def test_a_strategic_merge_patch_is_refused_on_a_custom_resource(
    custom: Api, api_client: client.ApiClient
) -> None:
    create(custom, pool())
    with pytest.raises(ApiException) as exc:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL, "eu", {"spec": {"size": 3}},
            _content_type="application/strategic-merge-patch+json",
        )  # fmt: skip
    assert exc.value.status == 415
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "eu", [{"op": "replace", "path": "/spec/size", "value": 6}],
        _content_type="application/json-patch+json",
    )  # fmt: skip
    assert patched["spec"]["size"] == 6


def test_the_scale_subresource_reads_and_writes_the_size(custom: Api) -> None:
    create(custom, pool())
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "eu", {"status": {"ready": 1, "selector": "proxyfleet-pool=eu"}}
    )
    scale = custom.get_namespaced_custom_object_scale(GROUP, VERSION, NS, PLURAL, "eu")
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "proxyfleet-pool=eu"}
    scaled = custom.patch_namespaced_custom_object_scale(
        GROUP, VERSION, NS, PLURAL, "eu", {"spec": {"replicas": 20}}
    )
    assert scaled["spec"] == {"replicas": 20}
    obj = custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "eu")
    assert (obj["spec"]["size"], obj["metadata"]["generation"]) == (20, 2)
    put = custom.replace_namespaced_custom_object_scale(
        GROUP, VERSION, NS, PLURAL, "eu", {**scaled, "spec": {"replicas": 3}}
    )
    assert put["spec"]["replicas"] == 3
    with pytest.raises(ApiException) as stale:
        custom.replace_namespaced_custom_object_scale(GROUP, VERSION, NS, PLURAL, "eu", scaled)
    assert stale.value.status == 409
    with pytest.raises(ApiException) as too_big:
        custom.patch_namespaced_custom_object_scale(
            GROUP, VERSION, NS, PLURAL, "eu", {"spec": {"replicas": 20000}}
        )
    assert too_big.value.status == 422
    assert (
        "spec.size in body should be less than or equal to 10000" in status_of(too_big)["message"]
    )


def test_scale_without_a_size_is_an_error_as_on_the_server(custom: Api) -> None:
    create(custom, pool("auto", size=None, autoscale={"min": 1, "max": 3}))
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object_scale(GROUP, VERSION, NS, PLURAL, "auto")
    assert exc.value.status == 500
    assert 'the spec replicas field ".spec.size" does not exist' in status_of(exc)["message"]


def test_finalizers_keep_a_deleted_resource_until_they_are_removed(custom: Api) -> None:
    body = pool()
    body["metadata"]["finalizers"] = ["proxyfleet.io/pool"]
    create(custom, body)
    kept = custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "eu")
    assert kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["finalizers"] == ["proxyfleet.io/pool"]
    with pytest.raises(ApiException) as more:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL, "eu",
            {"metadata": {"finalizers": ["proxyfleet.io/pool", "other"]}},
        )  # fmt: skip
    assert more.value.status == 422
    custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "eu")  # still there
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "eu", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(ApiException) as gone:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "eu")
    assert gone.value.status == 404
    assert status_of(gone)["message"] == f'{PLURAL}.{GROUP} "eu" not found'
    create(custom, pool("plain"))
    answer = custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "plain")
    assert answer["kind"] == "Status"  # gone at once: a Status, not the object


def test_a_watch_on_custom_resources_resumes_and_bookmarks(fake_api: FakeKube, custom: Api) -> None:
    fake_api.server.bookmark_interval = 0.2
    create(custom, pool("one"))
    since = custom.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["metadata"][
        "resourceVersion"
    ]
    create(custom, pool("two"))
    custom.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "one", {"spec": {"size": 4}})
    custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "two")
    stream = new_watch().stream(
        custom.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL,
        resource_version=since, allow_watch_bookmarks=True, timeout_seconds=1,
    )  # fmt: skip
    events = [(e["type"], e["raw_object"]) for e in stream]
    named = [(t, o["metadata"]["name"]) for t, o in events if t != "BOOKMARK"]
    assert named == [("ADDED", "two"), ("MODIFIED", "one"), ("DELETED", "two")]
    bookmarks = [o for t, o in events if t == "BOOKMARK"]
    assert bookmarks
    assert {(b["kind"], b["apiVersion"]) for b in bookmarks} == {(crd.KIND, crd.API_VERSION)}
    everywhere = new_watch().stream(
        custom.list_cluster_custom_object, GROUP, VERSION, PLURAL, timeout_seconds=1
    )
    assert [e["raw_object"]["metadata"]["name"] for e in everywhere] == ["one"]


def test_deleting_the_crd_stops_serving_its_resources(
    fake_api: FakeKube, custom: Api, api_client: client.ApiClient
) -> None:
    create(custom, pool())
    extensions(api_client).delete_custom_resource_definition(crd.NAME)
    wait_for(lambda: not fake_api.objects(f"{PLURAL}.{GROUP}"), what="the pools gone")
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "eu")
    assert exc.value.status == 404
    assert GROUP not in {g["name"] for g in get_json(api_client, "/apis")["groups"]}


def test_events_are_posted_and_calls_are_recorded_with_their_group(
    fake_api: FakeKube, custom: Api, api_client: client.ApiClient
) -> None:
    create(custom, pool())
    core: Api = client.CoreV1Api(api_client)
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name="proxyfleet-pool-"),
        involved_object=client.V1ObjectReference(kind=crd.KIND, name="eu", namespace=NS),
        reason="InvalidSpec",
        message="spec.size: too big",
        type="Warning",
    )
    made = core.create_namespaced_event(NS, event)
    assert made.metadata.name.startswith("proxyfleet-pool-")
    assert [e.reason for e in core.list_namespaced_event(NS).items] == ["InvalidSpec"]
    assert {("proxyfleet.io", "create", "proxypools"), ("", "create", "events")} <= (
        fake_api.rbac_calls()
    )
    assert ("apiextensions.k8s.io", "create", "customresourcedefinitions") in fake_api.rbac_calls()
