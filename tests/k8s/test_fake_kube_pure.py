"""The fake's pure parts: selectors, patches, validation, a pod's files and status, and
the squid.conf rewrite the kubelet runs."""

from __future__ import annotations

import base64

import pytest
from tests.k8s.fake_kube import manifests, pod_files
from tests.k8s.fake_kube.errors import KubeError
from tests.k8s.fake_kube.events import Event
from tests.k8s.fake_kube.patch import JSON_PATCH, MERGE, STRATEGIC, apply_patch, merge_patch
from tests.k8s.fake_kube.pod_status import PodView, render, waiting
from tests.k8s.fake_kube.selectors import (
    Requirement,
    object_filter,
    parse_field_selector,
    parse_label_selector,
)
from tests.k8s.fake_kube.strategic import strategic_merge
from tests.k8s.fake_kube.validation import validate
from tests.loopback_squid.conf import SquidConfError, rewrite_squid_conf

LABELS = {"app": "x", "tier": "1"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=x", True),
        ("app==x", True),
        ("app=y", False),
        ("app!=y", True),
        ("missing!=y", True),
        ("app in (x,y)", True),
        ("app in (y)", False),
        ("app notin (y, z)", True),
        ("missing notin (y)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=x, tier=1", True),
        ("app=x,tier=2", False),
        ("example.com/role=", False),
    ],
)
def test_label_selectors_match_as_the_api_server(selector: str, matches: bool) -> None:
    keep = object_filter(selector, None)
    assert keep({"metadata": {"labels": LABELS}}) is matches


def test_label_selector_requirements_parse() -> None:
    assert parse_label_selector("a in (x, y),!b,c!=d,e") == [
        Requirement("a", "in", ("x", "y")),
        Requirement("b", "!"),
        Requirement("c", "!=", ("d",)),
        Requirement("e", "exists"),
    ]


@pytest.mark.parametrize("bad", ["a in x", "a in ()", "a=b,", "a b", "=b", "a in (x", "bad key!=1"])
def test_malformed_label_selectors_are_400(bad: str) -> None:
    with pytest.raises(KubeError) as exc:
        parse_label_selector(bad)
    assert exc.value.code == 400


def test_field_selectors() -> None:
    pod = {"metadata": {"name": "p", "namespace": "n"}, "status": {"phase": "Running"}}
    assert object_filter(None, "metadata.name=p,status.phase=Running")(pod)
    assert not object_filter(None, "status.phase!=Running")(pod)
    assert object_filter(None, "metadata.namespace==n")(pod)
    with pytest.raises(KubeError):
        parse_field_selector("spec.unknown=1")


def test_merge_patch_is_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_patch(target, {"a": {"b": None, "c": [3]}, "e": {"f": 1}}) == {
        "a": {"c": [3]},
        "d": 1,
        "e": {"f": 1},
    }
    assert target == {"a": {"b": 1, "c": [1, 2]}, "d": 1}  # not changed in place
    assert apply_patch(STRATEGIC, target, {"d": 2})["d"] == 2
    assert apply_patch(MERGE + "; charset=utf-8", target, {"d": 3})["d"] == 3


def test_json_patch_operations() -> None:
    doc = {"metadata": {"labels": {"a/b": "1"}, "finalizers": ["x"]}, "data": {"k": "v"}}
    ops = [
        {"op": "add", "path": "/metadata/finalizers/-", "value": "y"},
        {"op": "remove", "path": "/metadata/labels/a~1b"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "copy", "from": "/data/k", "path": "/data/c"},
        {"op": "move", "from": "/data/c", "path": "/data/m"},
        {"op": "test", "path": "/data/m", "value": "w"},
        {"op": "add", "path": "/metadata/finalizers/0", "value": "first"},
    ]
    assert apply_patch(JSON_PATCH, doc, ops) == {
        "metadata": {"labels": {}, "finalizers": ["first", "x", "y"]},
        "data": {"k": "w", "m": "w"},
    }
    for bad in (
        [{"op": "test", "path": "/data/k", "value": "nope"}],
        [{"op": "remove", "path": "/data/missing"}],
        [{"op": "replace", "path": "/nope/deeper", "value": 1}],
    ):
        with pytest.raises(KubeError) as exc:
            apply_patch(JSON_PATCH, doc, bad)
        assert exc.value.code == 422
    with pytest.raises(KubeError) as exc:
        apply_patch("application/yaml", doc, {})
    assert exc.value.code == 415


def test_validation_lists_every_cause() -> None:
    pod = {
        "metadata": {"name": "ok", "labels": {"bad key": "v", "k": "bad value!"}},
        "spec": {
            "containers": [{"name": "Upper", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}]
        },
    }
    with pytest.raises(KubeError) as exc:
        validate("Pod", pod)
    fields = [c["field"] for c in exc.value.details["causes"]]
    assert fields == [
        "metadata.labels",
        "metadata.labels",
        "spec.containers[0].name",
        "spec.containers[0].image",
        "spec.containers[0].volumeMounts[0].name",
    ]
    assert exc.value.message.startswith(
        'Pod "ok" is invalid: [metadata.labels: Invalid value: "bad key"'
    )
    validate("Pod", manifests.squid_pod("fine"))
    long_name = "a" * 64
    with pytest.raises(KubeError):
        validate("Service", {"metadata": {"name": long_name}, "spec": {"ports": [{"port": 1}]}})
    validate("ConfigMap", {"metadata": {"name": long_name}})


def test_a_pods_volumes_become_files_and_mounts() -> None:
    pod = manifests.squid_pod("v")
    conf = manifests.squid_config_map("v", connect_ports=[8443])
    secret = manifests.htpasswd_secret("v", "alice", "pw")
    objects = {("configmaps", "pf-v"): conf, ("secrets", "pf-v"): secret}
    files = pod_files.volume_files(pod, lambda r, n: objects.get((r, n)))
    [conf_file] = files.volumes["config"]
    assert conf_file.path == "squid.conf"
    assert conf_file.content.decode() == conf["data"]["squid.conf"]
    [auth] = files.volumes["auth"]
    assert auth.content == base64.b64decode(secret["data"]["htpasswd"])
    assert files.volumes["run"] == []
    with pytest.raises(pod_files.MissingVolume, match='secret "pf-v" not found'):
        pod_files.volume_files(pod, lambda r, n: objects.get((r, n)) if r == "configmaps" else None)

    found = pod_files.squid_container(pod)
    assert found is not None
    index, container, path = found
    assert (index, path) == (0, "/etc/squid/proxyfleet/squid.conf")
    dirs = {v: f"/here/{v}" for v in files.volumes}
    mounted = pod_files.mounts(container, dirs)
    assert mounted["/etc/squid/auth"] == "/here/auth"
    assert pod_files.local_path(path, mounted) == "/here/config/squid.conf"
    assert pod_files.local_path("/elsewhere/x", mounted) is None
    assert pod_files.squid_argv(container, "/usr/sbin/squid", "/here/squid.conf", "svc") == [
        "/usr/sbin/squid",
        "-N",
        "-f",
        "/here/squid.conf",
        "-n",
        "svc",
    ]
    assert pod_files.probe_port(container, 1) == 3128
    container["readinessProbe"] = {"tcpSocket": {"port": "proxy"}}
    assert pod_files.probe_port(container, 1) == 3128


def test_the_conf_is_rewritten_to_the_pods_folders_and_address() -> None:
    conf = manifests.squid_config_map("r")["data"]["squid.conf"]
    moved = {
        "/etc/squid/auth": "/pod/auth",
        "/etc/squid": "/pod/wrong",
        "/var/run/squid": "/pod/run",
    }
    text, port = rewrite_squid_conf(conf, moved, "/pod", "127.9.0.1")
    assert port == 3128
    assert "http_port 127.9.0.1:3128" in text
    assert "auth_param basic program /usr/lib/squid/basic_ncsa_auth /pod/auth/htpasswd" in text
    assert "pid_filename /pod/squid.pid" in text
    assert "cache_log /pod/cache.log" in text
    assert "http_access deny local_destinations" not in text
    assert "http_access deny private_destinations" in text
    kept, _ = rewrite_squid_conf(conf, moved, "/pod", "127.9.0.1", allow_local_destinations=False)
    assert "http_access deny local_destinations" in kept
    with pytest.raises(SquidConfError):
        rewrite_squid_conf("visible_hostname x\n", {}, "/pod", "127.9.0.1")


def test_pod_status_renders_conditions_and_keeps_transition_times() -> None:
    pod = {
        "metadata": {"uid": "u-1"},
        "spec": {"containers": [{"name": "squid", "image": "i"}]},
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
    view = PodView(phase="Running", pod_ip="127.1.0.1", started=True, state=waiting("X"))
    first = render(pod, view, now=1000.0)
    ready = {c["type"]: c for c in first["conditions"]}["Ready"]
    assert ready["status"] == "False"
    assert ready["reason"] == "ContainersNotReady"
    assert first["podIP"] == "127.1.0.1"
    assert first["qosClass"] == "Burstable"
    assert first["containerStatuses"][0]["containerID"] == "containerd://u1"
    pod["status"] = first
    view.ready = True
    second = render(pod, view, now=2000.0)
    conds = {c["type"]: c for c in second["conditions"]}
    assert conds["Ready"]["status"] == "True"
    assert conds["Ready"]["lastTransitionTime"] == "1970-01-01T00:33:20Z"
    assert conds["PodScheduled"]["lastTransitionTime"] == "1970-01-01T00:16:40Z"


def test_strategic_merge_merges_keyed_lists_and_sets() -> None:
    pod = {
        "metadata": {"finalizers": ["a"], "ownerReferences": [{"uid": "1", "name": "x"}]},
        "spec": {
            "containers": [{"name": "squid", "image": "i:1", "ports": [{"containerPort": 3128}]}],
            "tolerations": [{"key": "k"}],
        },
    }
    patched = strategic_merge(
        pod,
        {
            "metadata": {
                "finalizers": ["b", "a"],
                "ownerReferences": [{"uid": "1", "name": "y"}, {"uid": "2", "name": "z"}],
            },
            "spec": {
                "containers": [{"name": "squid", "image": "i:2"}, {"name": "side", "image": "s"}],
                "tolerations": [{"key": "other"}],
            },
        },
    )
    assert patched["metadata"]["finalizers"] == ["a", "b"]
    assert patched["metadata"]["ownerReferences"] == [
        {"uid": "1", "name": "y"},
        {"uid": "2", "name": "z"},
    ]
    assert patched["spec"]["containers"] == [
        {"name": "squid", "image": "i:2", "ports": [{"containerPort": 3128}]},
        {"name": "side", "image": "s"},
    ]
    assert patched["spec"]["tolerations"] == [{"key": "other"}]  # no strategy: replaced
    removed = strategic_merge(
        patched,
        {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "b"]},
            "spec": {"containers": [{"name": "side", "$patch": "delete"}]},
        },
    )
    assert "finalizers" not in removed["metadata"]
    assert [c["name"] for c in removed["spec"]["containers"]] == ["squid"]
    replaced = strategic_merge(patched, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced["spec"] == {"containers": []}


def test_a_change_is_seen_by_a_selector_watch_as_the_server_says() -> None:
    def cm(app: str) -> dict[str, object]:
        return {"metadata": {"labels": {"app": app}}}

    keep = object_filter("app=x", None)
    assert Event("MODIFIED", "configmaps", cm("x"), 2, cm("y")).seen_as(keep) == "ADDED"
    assert Event("MODIFIED", "configmaps", cm("y"), 2, cm("x")).seen_as(keep) == "DELETED"
    assert Event("MODIFIED", "configmaps", cm("x"), 2, cm("x")).seen_as(keep) == "MODIFIED"
    assert Event("MODIFIED", "configmaps", cm("y"), 2, cm("z")).seen_as(keep) is None
    assert Event("ADDED", "configmaps", cm("x"), 2).seen_as(keep) == "ADDED"
    assert Event("DELETED", "configmaps", cm("y"), 2).seen_as(keep) is None
