"""The fake API server through the real client: create, get, list with selectors, patch,
update, delete, errors, and resourceVersions."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.conftest import NAMESPACE, Core, to_json, wait_for
from tests.k8s.fake_kube import FakeKube


def _config_map(name: str, labels: dict[str, str] | None = None, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def _pod(name: str, labels: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36")]),
    )


def _status(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, object]:
    body = json.loads(exc.value.body or "")
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["code"] == exc.value.status
    return dict(body)


def test_config_map_create_get_list_delete(core_v1: Core) -> None:
    made = core_v1.create_namespaced_config_map(NAMESPACE, _config_map("one", {"a": "1"}, k="v"))
    assert made.metadata.uid
    assert made.metadata.namespace == NAMESPACE
    assert made.metadata.creation_timestamp is not None
    got = core_v1.read_namespaced_config_map("one", NAMESPACE)
    assert got.data == {"k": "v"}
    assert got.metadata.resource_version == made.metadata.resource_version
    listed = core_v1.list_namespaced_config_map(NAMESPACE)
    assert [c.metadata.name for c in listed.items] == ["one"]
    assert int(listed.metadata.resource_version) >= int(made.metadata.resource_version)
    assert core_v1.list_namespaced_config_map("elsewhere").items == []
    # The client types this answer as a plain object: the Status dict.
    status = core_v1.delete_namespaced_config_map("one", NAMESPACE)
    assert status["kind"] == "Status"
    assert status["status"] == "Success"
    with pytest.raises(ApiException) as exc:
        core_v1.read_namespaced_config_map("one", NAMESPACE)
    assert exc.value.status == 404
    assert _status(exc)["reason"] == "NotFound"
    assert _status(exc)["message"] == 'configmaps "one" not found'


def test_secret_string_data_is_stored_as_base64_data(core_v1: Core) -> None:
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name="s"), string_data={"htpasswd": "a:b\n"}
    )
    made = core_v1.create_namespaced_secret(NAMESPACE, body)
    assert made.data == {"htpasswd": "YTpiCg=="}
    assert made.type == "Opaque"
    assert made.string_data is None
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_secret(NAMESPACE, body)
    assert exc.value.status == 409
    assert _status(exc)["reason"] == "AlreadyExists"
    assert _status(exc)["message"] == 'secrets "s" already exists'


def test_resource_versions_strictly_increase_across_resources(core_v1: Core) -> None:
    seen = [
        core_v1.create_namespaced_config_map(NAMESPACE, _config_map("a")).metadata.resource_version,
        core_v1.create_namespaced_secret(
            NAMESPACE, client.V1Secret(metadata=client.V1ObjectMeta(name="b"))
        ).metadata.resource_version,
        core_v1.patch_namespaced_config_map(
            "a", NAMESPACE, {"data": {"x": "y"}}
        ).metadata.resource_version,
        core_v1.create_namespaced_pod(NAMESPACE, _pod("c")).metadata.resource_version,
    ]
    numbers = [int(v) for v in seen]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)


def test_invalid_names_and_pods_answer_422_with_the_servers_wording(
    core_v1: Core,
) -> None:
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_config_map(NAMESPACE, _config_map("Bad_Name"))
    assert exc.value.status == 422
    body = _status(exc)
    assert body["reason"] == "Invalid"
    assert str(body["message"]).startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase '
        "RFC 1123 subdomain must consist of"
    )
    assert body["details"] == {
        "name": "Bad_Name",
        "kind": "ConfigMap",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": str(body["message"]).split("metadata.name: ", 1)[1],
                "field": "metadata.name",
            }
        ],
    }
    empty = client.V1Pod(
        metadata=client.V1ObjectMeta(name="empty"), spec=client.V1PodSpec(containers=[])
    )
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_pod(NAMESPACE, empty)
    assert exc.value.status == 422
    assert _status(exc)["message"] == 'Pod "empty" is invalid: spec.containers: Required value'


def test_generate_name_makes_a_unique_name(core_v1: Core) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
    a = core_v1.create_namespaced_config_map(NAMESPACE, body).metadata.name
    b = core_v1.create_namespaced_config_map(NAMESPACE, body).metadata.name
    assert a.startswith("gen-")
    assert b.startswith("gen-")
    assert a != b


def test_list_with_label_and_field_selectors(core_v1: Core) -> None:
    for name, labels in [
        ("a", {"app": "x", "tier": "1"}),
        ("b", {"app": "y"}),
        ("c", {"tier": "2"}),
    ]:
        core_v1.create_namespaced_config_map(NAMESPACE, _config_map(name, labels))

    def names(**kwargs: str) -> list[str]:
        return [
            c.metadata.name for c in core_v1.list_namespaced_config_map(NAMESPACE, **kwargs).items
        ]

    assert names(label_selector="app=x") == ["a"]
    assert names(label_selector="app==y") == ["b"]
    assert names(label_selector="app!=x") == ["b", "c"]
    assert names(label_selector="app in (x, y)") == ["a", "b"]
    assert names(label_selector="tier notin (1)") == ["b", "c"]
    assert names(label_selector="tier") == ["a", "c"]
    assert names(label_selector="!tier") == ["b"]
    assert names(label_selector="app=x,tier=1") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b") == ["a", "c"]
    with pytest.raises(ApiException) as exc:
        names(label_selector="app in x")
    assert exc.value.status == 400


def test_list_across_namespaces_and_in_pages(core_v1: Core) -> None:
    for ns in ("one", "two"):
        for i in range(3):
            core_v1.create_namespaced_config_map(ns, _config_map(f"c{i}"))
    everything = core_v1.list_config_map_for_all_namespaces()
    assert len(everything.items) == 6
    first = core_v1.list_namespaced_config_map("one", limit=2)
    assert len(first.items) == 2
    assert first.metadata.remaining_item_count == 1
    rest = core_v1.list_namespaced_config_map("one", limit=2, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["c2"]
    assert rest.metadata._continue is None


def test_patch_kinds_and_update_conflicts(core_v1: Core) -> None:
    core_v1.create_namespaced_config_map(NAMESPACE, _config_map("p", {"a": "1"}, k="v"))
    # A dict is sent as a strategic merge patch: maps merge, null removes.
    merged = core_v1.patch_namespaced_config_map(
        "p", NAMESPACE, {"metadata": {"labels": {"b": "2"}}, "data": {"k": None, "n": "1"}}
    )
    assert merged.metadata.labels == {"a": "1", "b": "2"}
    assert merged.data == {"n": "1"}
    # A list is a JSON patch.
    ops = [
        {"op": "replace", "path": "/data/n", "value": "2"},
        {"op": "remove", "path": "/metadata/labels/a"},
    ]
    patched = core_v1.patch_namespaced_config_map("p", NAMESPACE, ops)
    assert patched.data == {"n": "2"}
    assert patched.metadata.labels == {"b": "2"}
    with pytest.raises(ApiException) as exc:
        core_v1.patch_namespaced_config_map(
            "p", NAMESPACE, [{"op": "test", "path": "/data/n", "value": "9"}]
        )
    assert exc.value.status == 422
    merge = core_v1.patch_namespaced_config_map(
        "p", NAMESPACE, {"data": {"m": "1"}}, _content_type="application/merge-patch+json"
    )
    assert merge.data == {"n": "2", "m": "1"}

    stale = patched
    stale.data = {"lost": "update"}
    with pytest.raises(ApiException) as exc:
        core_v1.replace_namespaced_config_map("p", NAMESPACE, stale)
    assert exc.value.status == 409
    assert _status(exc)["reason"] == "Conflict"
    assert "the object has been modified" in str(_status(exc)["message"])
    with pytest.raises(ApiException) as exc:
        core_v1.patch_namespaced_config_map(
            "p", NAMESPACE, {"metadata": {"resourceVersion": stale.metadata.resource_version}}
        )
    assert exc.value.status == 409
    fresh = core_v1.read_namespaced_config_map("p", NAMESPACE)
    fresh.data = {"new": "yes"}
    replaced = core_v1.replace_namespaced_config_map("p", NAMESPACE, fresh)
    assert replaced.data == {"new": "yes"}
    assert int(replaced.metadata.resource_version) > int(fresh.metadata.resource_version)
    with pytest.raises(ApiException) as exc:
        core_v1.patch_namespaced_config_map("missing", NAMESPACE, {"data": {}})
    assert exc.value.status == 404


def test_pod_status_subresource_and_main_resource_keep_apart(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    core_v1.create_namespaced_pod(NAMESPACE, _pod("s"))
    wait_for(lambda: core_v1.read_namespaced_pod("s", NAMESPACE).status.phase == "Running")
    pod = core_v1.patch_namespaced_pod(
        "s", NAMESPACE, {"metadata": {"labels": {"x": "1"}}, "status": {"phase": "Failed"}}
    )
    assert pod.metadata.labels == {"x": "1"}
    assert pod.status.phase == "Running"
    pod = core_v1.patch_namespaced_pod_status("s", NAMESPACE, {"status": {"message": "hello"}})
    assert pod.status.message == "hello"
    assert ("patch", "pods/status") in fake_kube.verbs()


def test_calls_record_verb_resource_namespace_name_and_code(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    core_v1.create_namespaced_secret(
        NAMESPACE, client.V1Secret(metadata=client.V1ObjectMeta(name="r"))
    )
    core_v1.read_namespaced_secret("r", NAMESPACE)
    core_v1.list_namespaced_secret(NAMESPACE, label_selector="a=b")
    with pytest.raises(ApiException):
        core_v1.read_namespaced_secret("nope", NAMESPACE)
    core_v1.delete_namespaced_secret("r", NAMESPACE)
    core_v1.list_pod_for_all_namespaces()
    calls = [(c.verb, c.resource, c.namespace, c.name, c.code) for c in fake_kube.calls]
    assert calls == [
        ("create", "secrets", NAMESPACE, "", 201),
        ("get", "secrets", NAMESPACE, "r", 200),
        ("list", "secrets", NAMESPACE, "", 200),
        ("get", "secrets", NAMESPACE, "nope", 404),
        ("delete", "secrets", NAMESPACE, "r", 200),
        ("list", "pods", "", "", 200),
    ]
    assert fake_kube.verbs() == {
        ("create", "secrets"),
        ("get", "secrets"),
        ("list", "secrets"),
        ("delete", "secrets"),
        ("list", "pods"),
    }


def test_objects_are_the_json_the_api_returns(fake_kube: FakeKube, core_v1: Core) -> None:
    made = core_v1.create_namespaced_config_map(NAMESPACE, _config_map("j", {"a": "b"}))
    [stored] = fake_kube.objects("configmaps", NAMESPACE)
    sent = to_json(made)  # the client writes timestamps back as +00:00, the server as Z
    assert stored["metadata"].pop("creationTimestamp").endswith("Z")
    assert sent["metadata"].pop("creationTimestamp").endswith("+00:00")
    assert stored == sent
    assert stored["apiVersion"] == "v1"
    assert stored["kind"] == "ConfigMap"


def test_a_pod_spec_is_immutable_but_for_its_images(core_v1: Core) -> None:
    core_v1.create_namespaced_pod(NAMESPACE, _pod("im"))
    changed = core_v1.patch_namespaced_pod(
        "im", NAMESPACE, {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
    )
    assert changed.spec.containers[0].image == "busybox:1.37"
    with pytest.raises(ApiException) as exc:
        core_v1.patch_namespaced_pod("im", NAMESPACE, {"spec": {"restartPolicy": "Never"}})
    assert exc.value.status == 422
    assert "pod updates may not change fields" in str(_status(exc)["message"])


def test_timestamps_follow_the_fakes_clock(fake_kube_factory: Callable[..., FakeKube]) -> None:
    fake = fake_kube_factory(now=lambda: 1_000_000_000.0)
    with client.ApiClient(fake.configuration()) as api_client:
        client.CoreV1Api(api_client).create_namespaced_config_map(NAMESPACE, _config_map("old"))
    [made] = fake.objects("configmaps")
    assert made["metadata"]["creationTimestamp"] == "2001-09-09T01:46:40Z"
