"""Custom resources in the fake API server beyond their schema: the status and scale
subresources, generations, finalizers, watch; Events posted and calls recorded."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.conftest import new_watch, wait_for
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
