"""Deletion as the API server and its garbage collector do it: finalizers keep an object
(with deletionTimestamp) until removed; dependents go with their owner (background or
foreground) unless orphaned; a pod is first marked, then removed once its kubelet let go."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.conftest import NAMESPACE, Core, new_watch, to_json, wait_for
from tests.k8s.fake_kube import FakeKube


def _pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36")]),
    )


def _owned_secret(name: str, owner: Any) -> client.V1Secret:
    ref = client.V1OwnerReference(
        api_version="v1",
        kind="Pod",
        name=owner.metadata.name,
        uid=owner.metadata.uid,
        controller=False,
    )
    return client.V1Secret(metadata=client.V1ObjectMeta(name=name, owner_references=[ref]))


def _names(fake: FakeKube, resource: str) -> list[str]:
    return [o["metadata"]["name"] for o in fake.objects(resource, NAMESPACE)]


def test_a_finalizer_keeps_a_deleted_object_until_it_is_removed(core_v1: Core) -> None:
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="f", finalizers=["example.com/hold"])
    )
    core_v1.create_namespaced_config_map(NAMESPACE, body)
    core_v1.delete_namespaced_config_map("f", NAMESPACE)
    held = core_v1.read_namespaced_config_map("f", NAMESPACE)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    # No new finalizers on an object being deleted.
    with pytest.raises(ApiException) as exc:
        core_v1.patch_namespaced_config_map(
            "f", NAMESPACE, {"metadata": {"finalizers": ["example.com/hold", "more"]}}
        )
    assert exc.value.status == 422
    # Deleting again changes nothing.
    core_v1.delete_namespaced_config_map("f", NAMESPACE)
    again = core_v1.read_namespaced_config_map("f", NAMESPACE)
    assert again.metadata.deletion_timestamp == held.metadata.deletion_timestamp
    core_v1.patch_namespaced_config_map("f", NAMESPACE, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as exc:
        core_v1.read_namespaced_config_map("f", NAMESPACE)
    assert exc.value.status == 404


def test_deleting_a_pod_marks_it_then_removes_it(fake_kube: FakeKube, core_v1: Core) -> None:
    core_v1.create_namespaced_pod(NAMESPACE, _pod("p"))
    wait_for(lambda: core_v1.read_namespaced_pod("p", NAMESPACE).status.phase == "Running")
    since = core_v1.list_namespaced_pod(NAMESPACE).metadata.resource_version
    answer = core_v1.delete_namespaced_pod("p", NAMESPACE)
    assert answer.metadata.deletion_timestamp is not None
    assert answer.metadata.deletion_grace_period_seconds == 30
    wait_for(lambda: not fake_kube.objects("pods"), what="the pod removed")
    events = [
        (e["type"], e["object"].metadata.deletion_timestamp is not None)
        for e in new_watch().stream(
            core_v1.list_namespaced_pod, NAMESPACE, resource_version=since, timeout_seconds=1
        )
    ]
    assert events[0] == ("MODIFIED", True)
    assert events[-1] == ("DELETED", True)


def test_a_pod_deleted_with_grace_zero_is_gone_at_once(fake_kube: FakeKube, core_v1: Core) -> None:
    core_v1.create_namespaced_pod(NAMESPACE, _pod("now"))
    core_v1.delete_namespaced_pod("now", NAMESPACE, grace_period_seconds=0)
    assert fake_kube.objects("pods") == []


def test_dependents_go_with_their_owner(fake_kube: FakeKube, core_v1: Core) -> None:
    pod = core_v1.create_namespaced_pod(NAMESPACE, _pod("owner"))
    core_v1.create_namespaced_secret(NAMESPACE, _owned_secret("dep", pod))
    core_v1.delete_namespaced_pod("owner", NAMESPACE)
    wait_for(lambda: not _names(fake_kube, "pods"), what="the pod gone")
    wait_for(lambda: not _names(fake_kube, "secrets"), what="its secret gone")


def test_orphan_keeps_dependents_without_the_owner_reference(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    pod = core_v1.create_namespaced_pod(NAMESPACE, _pod("owner"))
    core_v1.create_namespaced_secret(NAMESPACE, _owned_secret("kept", pod))
    core_v1.delete_namespaced_pod("owner", NAMESPACE, propagation_policy="Orphan")
    wait_for(lambda: not _names(fake_kube, "pods"), what="the pod gone")
    kept = core_v1.read_namespaced_secret("kept", NAMESPACE)
    assert kept.metadata.owner_references is None


def test_foreground_deletion_waits_for_dependents(fake_kube: FakeKube, core_v1: Core) -> None:
    owner = core_v1.create_namespaced_config_map(
        NAMESPACE, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    ref = client.V1OwnerReference(
        api_version="v1",
        kind="ConfigMap",
        name="owner",
        uid=owner.metadata.uid,
        block_owner_deletion=True,
    )
    dependent = client.V1Secret(
        metadata=client.V1ObjectMeta(
            name="dep", owner_references=[ref], finalizers=["example.com/slow"]
        )
    )
    core_v1.create_namespaced_secret(NAMESPACE, dependent)
    core_v1.delete_namespaced_config_map("owner", NAMESPACE, propagation_policy="Foreground")
    marked = wait_for(
        lambda: core_v1.read_namespaced_secret("dep", NAMESPACE).metadata.deletion_timestamp,
        what="the dependent marked",
    )
    assert marked is not None
    waiting_owner = core_v1.read_namespaced_config_map("owner", NAMESPACE)
    assert waiting_owner.metadata.finalizers == ["foregroundDeletion"]
    assert waiting_owner.metadata.deletion_timestamp is not None
    core_v1.patch_namespaced_secret("dep", NAMESPACE, {"metadata": {"finalizers": None}})
    wait_for(lambda: not _names(fake_kube, "configmaps"), what="the owner gone")
    assert _names(fake_kube, "secrets") == []


def test_a_dependent_of_an_owner_already_gone_is_collected(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    pod = core_v1.create_namespaced_pod(NAMESPACE, _pod("short"))
    core_v1.delete_namespaced_pod("short", NAMESPACE, grace_period_seconds=0)
    core_v1.create_namespaced_secret(NAMESPACE, _owned_secret("late", pod))
    wait_for(lambda: not _names(fake_kube, "secrets"), what="the late secret collected")


def test_delete_preconditions_and_missing_objects(core_v1: Core) -> None:
    made = core_v1.create_namespaced_config_map(
        NAMESPACE, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"))
    )
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid"))
    with pytest.raises(ApiException) as exc:
        core_v1.delete_namespaced_config_map("c", NAMESPACE, body=wrong)
    assert exc.value.status == 409
    right = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=made.metadata.uid))
    core_v1.delete_namespaced_config_map("c", NAMESPACE, body=right)
    with pytest.raises(ApiException) as exc:
        core_v1.delete_namespaced_config_map("c", NAMESPACE)
    assert exc.value.status == 404
    assert to_json(made)["metadata"]["name"] == "c"


def test_delete_collection_by_label(fake_kube: FakeKube, core_v1: Core) -> None:
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        meta = client.V1ObjectMeta(name=name, labels={"app": app})
        core_v1.create_namespaced_config_map(NAMESPACE, client.V1ConfigMap(metadata=meta))
    core_v1.delete_collection_namespaced_config_map(NAMESPACE, label_selector="app=x")
    assert _names(fake_kube, "configmaps") == ["c"]
    assert ("deletecollection", "configmaps") in fake_kube.verbs()


def test_a_paused_collector_leaves_dependents_for_a_sweeper(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    fake_kube.gc.pause()
    pod = core_v1.create_namespaced_pod(NAMESPACE, _pod("owner"))
    core_v1.create_namespaced_secret(NAMESPACE, _owned_secret("left", pod))
    core_v1.delete_namespaced_pod("owner", NAMESPACE, grace_period_seconds=0)
    assert _names(fake_kube, "secrets") == ["left"]
    fake_kube.gc.resume()
    wait_for(lambda: not _names(fake_kube, "secrets"), what="the secret collected after resume")
