"""Watches through the real client's kubernetes.watch.Watch: events, resuming from a
resourceVersion, 410 Gone after compaction, dropped streams, bookmarks."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.conftest import NAMESPACE, Core, new_watch, wait_for
from tests.k8s.fake_kube import FakeKube


def _cm(name: str, labels: dict[str, str] | None = None) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data={"k": "v"}
    )


class Collector:
    """A watch stream read in a thread of its own, as a provisioner's watcher does."""

    def __init__(self, api: Core, **kwargs: Any) -> None:
        self.events: list[tuple[str, str]] = []
        self.error: BaseException | None = None
        self.watch = new_watch()
        self._thread = threading.Thread(target=self._read, args=(api, kwargs), daemon=True)
        self._thread.start()

    def _read(self, api: Core, kwargs: dict[str, Any]) -> None:
        try:
            for event in self.watch.stream(api.list_namespaced_config_map, NAMESPACE, **kwargs):
                self.events.append((event["type"], event["raw_object"]["metadata"].get("name", "")))
        except BaseException as exc:  # what ended the stream is what the test looks at
            self.error = exc

    def ended(self, within: float = 5.0) -> bool:
        self._thread.join(within)
        return not self._thread.is_alive()


def test_a_live_watch_sees_added_modified_deleted(fake_kube: FakeKube, core_v1: Core) -> None:
    seen = Collector(core_v1, label_selector="app=x")
    # The call is recorded once the watch has subscribed.
    wait_for(lambda: any(c.verb == "watch" for c in fake_kube.calls), what="the watch open")
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("a", {"app": "x"}))
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("other", {"app": "y"}))
    core_v1.patch_namespaced_config_map("a", NAMESPACE, {"data": {"k": "w"}})
    core_v1.delete_namespaced_config_map("a", NAMESPACE)
    wait_for(lambda: len(seen.events) >= 3, what="three events")
    seen.watch.stop()
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("after-stop", {"app": "x"}))  # wakes it
    assert seen.ended()
    assert seen.events[:3] == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_a_watch_without_a_version_starts_with_every_object(core_v1: Core) -> None:
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("one"))
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("two"))
    events = [
        (e["type"], e["object"].metadata.name)
        for e in new_watch().stream(
            core_v1.list_namespaced_config_map, NAMESPACE, timeout_seconds=1
        )
    ]
    assert events == [("ADDED", "one"), ("ADDED", "two")]


def test_a_watch_resumes_after_a_resource_version(core_v1: Core) -> None:
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("before"))
    since = core_v1.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("after"))
    core_v1.patch_namespaced_config_map("before", NAMESPACE, {"data": {"k": "2"}})
    core_v1.delete_namespaced_config_map("after", NAMESPACE)
    stream = new_watch().stream(
        core_v1.list_namespaced_config_map, NAMESPACE, resource_version=since, timeout_seconds=1
    )
    events = [
        (e["type"], e["object"].metadata.name, e["object"].metadata.resource_version)
        for e in stream
    ]
    assert [(t, n) for t, n, _ in events] == [
        ("ADDED", "after"),
        ("MODIFIED", "before"),
        ("DELETED", "after"),
    ]
    versions = [int(v) for _, _, v in events]
    assert versions == sorted(versions)
    assert versions[0] > int(since)


def test_after_compaction_an_old_version_is_410_gone(fake_kube: FakeKube, core_v1: Core) -> None:
    since = core_v1.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("x"))
    fake_kube.compact()
    # The client retries a 410 once from the same version, then raises it.
    with pytest.raises(ApiException) as exc:
        list(
            new_watch().stream(
                core_v1.list_namespaced_config_map, NAMESPACE, resource_version=since
            )
        )
    assert exc.value.status == 410
    assert "too old resource version" in str(exc.value.reason)
    watches = [c for c in fake_kube.calls if c.verb == "watch"]
    assert [c.code for c in watches] == [410, 410]
    # A fresh list's version is watchable again.
    fresh = core_v1.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    stream = new_watch().stream(
        core_v1.list_namespaced_config_map, NAMESPACE, resource_version=fresh, timeout_seconds=1
    )
    assert list(stream) == []


def test_drop_watches_breaks_open_streams(fake_kube: FakeKube, core_v1: Core) -> None:
    seen = Collector(core_v1)
    wait_for(lambda: any(c.verb == "watch" for c in fake_kube.calls), what="the watch open")
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("one"))
    wait_for(lambda: seen.events, what="an event")
    assert fake_kube.drop_watches() == 1
    assert seen.ended()
    assert isinstance(seen.error, urllib3.exceptions.ProtocolError)


def test_timeout_seconds_ends_a_stream_cleanly(core_v1: Core) -> None:
    assert (
        list(new_watch().stream(core_v1.list_namespaced_config_map, NAMESPACE, timeout_seconds=1))
        == []
    )


def test_bookmarks_carry_the_current_version(fake_kube: FakeKube, core_v1: Core) -> None:
    fake_kube.server.bookmark_interval = 0.2
    made = core_v1.create_namespaced_config_map(NAMESPACE, _cm("b"))
    stream = new_watch().stream(
        core_v1.list_namespaced_config_map,
        NAMESPACE,
        resource_version=made.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=1,
    )
    kinds = [(e["type"], e["raw_object"]["metadata"]["resourceVersion"]) for e in stream]
    assert kinds
    assert {t for t, _ in kinds} == {"BOOKMARK"}
    assert {v for _, v in kinds} == {made.metadata.resource_version}


def test_watch_pods_across_namespaces_is_recorded_without_one(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    assert list(new_watch().stream(core_v1.list_pod_for_all_namespaces, timeout_seconds=1)) == []
    assert [(c.verb, c.resource, c.namespace) for c in fake_kube.calls] == [("watch", "pods", "")]


def test_a_selector_watch_sees_objects_move_in_and_out(core_v1: Core) -> None:
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("m", {"app": "other"}))
    since = core_v1.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    core_v1.patch_namespaced_config_map("m", NAMESPACE, {"metadata": {"labels": {"app": "x"}}})
    core_v1.patch_namespaced_config_map("m", NAMESPACE, {"data": {"k": "2"}})
    core_v1.patch_namespaced_config_map("m", NAMESPACE, {"metadata": {"labels": {"app": "y"}}})
    core_v1.patch_namespaced_config_map("m", NAMESPACE, {"data": {"k": "3"}})
    stream = new_watch().stream(
        core_v1.list_namespaced_config_map,
        NAMESPACE,
        label_selector="app=x",
        resource_version=since,
        timeout_seconds=1,
    )
    assert [e["type"] for e in stream] == ["ADDED", "MODIFIED", "DELETED"]
