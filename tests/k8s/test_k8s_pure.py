"""The pure layer of the Kubernetes provisioner: names, manifests (validated against the
Kubernetes 1.37 schema), squid.conf, error classification, pod status and orphans."""

from __future__ import annotations

import base64
import re
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from tests.k8s.k8s_provider import settings_for

from proxyfleet.common.runner.failures import Kind
from proxyfleet.provisioner_k8s.pure import manifests, names
from proxyfleet.provisioner_k8s.pure.classify import ApiFailure, classify, status_body
from proxyfleet.provisioner_k8s.pure.manifests import ProxyObjects
from proxyfleet.provisioner_k8s.pure.pods import failure_reason, parse_timestamp, pod_state
from proxyfleet.provisioner_k8s.pure.sweep import Leftover, orphans

K8S_VERSION = "1.37.0"
UID = "0b6c1c36-4f1e-4b2f-9d4a-3d4d7a2e9f10"


def _objects(zone: str = "default") -> ProxyObjects:
    labels = names.labels("inst-1", "cluster", "p123", {"team": "egress"})
    notes = names.proxy_annotations(zone, 1_700_000_000.5, 3128, {"a": "b c"}, {})
    return ProxyObjects("p123", "proxies", labels, notes, zone)


def _validate(manifest: dict[str, Any]) -> None:
    kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


# ---- names ---------------------------------------------------------------------------


def test_names_and_resource_ids_round_trip() -> None:
    assert names.object_name("p123") == "pf-p123"
    rid = names.resource_id("proxies", "p123")
    assert rid == "proxies/pf-p123"
    assert names.parse_resource_id(rid) == ("proxies", "pf-p123")
    for bad in ("pf-p123", "proxies/", "proxies/other", "/pf-p1"):
        with pytest.raises(ValueError, match="expected <namespace>/pf-<proxy id>"):
            names.parse_resource_id(bad)


def test_labels_carry_ours_over_the_extra_ones() -> None:
    got = names.labels("inst-1", "cluster", "p123", {"team": "egress"})
    assert got == {
        "team": "egress",
        "app.kubernetes.io/managed-by": "proxyfleet",
        "proxyfleet.io/installation": "inst-1",
        "proxyfleet.io/proxy-id": "p123",
        "proxyfleet.io/provider": "cluster",
    }
    assert names.installation_selector("inst-1", "cluster") == (
        "app.kubernetes.io/managed-by=proxyfleet,proxyfleet.io/installation=inst-1,"
        "proxyfleet.io/provider=cluster"
    )
    assert names.is_ours(got, "inst-1", "p123")
    assert not names.is_ours(got, "inst-2", "p123")
    assert not names.is_ours(got, "inst-1", "p124")
    assert not names.is_ours(None, "inst-1", "p123")


def test_ids_must_be_label_values() -> None:
    names.check_label_value("installation id", "prod-eu.1")
    for bad in ("", "Prod EU", "-x", "x" * 64):
        with pytest.raises(ValueError, match="must be a Kubernetes label value"):
            names.check_label_value("installation id", bad)


def test_annotations_keep_labels_and_placement_that_are_not_label_safe() -> None:
    notes = names.proxy_annotations("eu", 12.5, 3128, {"purpose": "a b/c"}, {"k": "v"})
    assert names.string_map(notes[names.ANNOTATION_LABELS]) == {"purpose": "a b/c"}
    assert names.string_map(notes[names.ANNOTATION_PLACEMENT]) == {"k": "v"}
    assert notes[names.ANNOTATION_ZONE] == "eu"
    assert names.string_map("not json") == names.string_map("[1]") == names.string_map(None) == {}


# ---- manifests -----------------------------------------------------------------------


def test_the_pod_follows_the_agreed_layout_and_validates() -> None:
    s = settings_for(image="ubuntu/squid:6.6-24.04_beta")
    pod = manifests.pod_manifest(_objects(), s)
    _validate(pod)
    assert pod["metadata"]["name"] == "pf-p123"
    assert pod["metadata"]["namespace"] == "proxies"
    assert pod["metadata"]["labels"]["proxyfleet.io/proxy-id"] == "p123"
    assert "ownerReferences" not in pod["metadata"]
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Always"
    [c] = spec["containers"]
    assert c["command"] == ["squid", "-N", "-f", "/etc/squid/proxyfleet/squid.conf"]
    assert c["image"] == "ubuntu/squid:6.6-24.04_beta"
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 13, "runAsGroup": 13,
        "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }  # fmt: skip
    assert c["readinessProbe"]["tcpSocket"] == {"port": 3128}
    assert c["resources"] == {
        "requests": {"cpu": "50m", "memory": "64Mi"},
        "limits": {"cpu": "500m", "memory": "128Mi"},
    }
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts == {
        "config": "/etc/squid/proxyfleet", "auth": "/etc/squid/auth",
        "run": "/var/run/squid", "log": "/var/log/squid",
        "spool": "/var/spool/squid", "cache": "/var/cache/squid",
    }  # fmt: skip
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "pf-p123"
    assert volumes["config"]["configMap"]["items"] == [{"key": "squid.conf", "path": "squid.conf"}]
    assert volumes["auth"]["secret"]["secretName"] == "pf-p123"
    # Only the htpasswd is mounted: the plain credentials stay in the API.
    assert volumes["auth"]["secret"]["items"] == [{"key": "htpasswd", "path": "htpasswd"}]
    assert all(volumes[v] == {"name": v, "emptyDir": {}} for v in ("run", "log", "spool", "cache"))
    assert "nodeSelector" not in spec
    assert "tolerations" not in spec


def test_zone_node_label_node_selector_and_tolerations() -> None:
    s = settings_for(
        node_selector={"pool": "proxies"},
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "proxies",
                      "effect": "NoSchedule"},
                     {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
        resources={"requests": {"cpu": 1}, "limits": {"cpu": 2.0, "memory": "1Gi"}},
    )  # fmt: skip
    pod = manifests.pod_manifest(_objects("eu"), s)
    _validate(pod)
    assert pod["spec"]["nodeSelector"] == {
        "pool": "proxies",
        "topology.kubernetes.io/zone": "europe-west1-b",
    }
    assert pod["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "proxies", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
    ]
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"},
        "limits": {"cpu": "2", "memory": "1Gi"},
    }
    other = manifests.pod_manifest(_objects("default"), s)
    assert other["spec"]["nodeSelector"] == {"pool": "proxies"}


def test_squid_conf_has_the_limits_that_keep_squid_alive_in_a_container() -> None:
    conf = manifests.squid_conf(settings_for(source_ranges=["10.0.0.0/8"]), 3129)
    lines = conf.splitlines()
    assert "max_filedescriptors 1024" in lines
    assert "cache_mem 16 MB" in lines
    assert "http_port 0.0.0.0:3129" in lines
    assert "pid_filename /var/run/squid/squid.pid" in lines
    assert "cache_log /dev/stderr" in lines
    assert (
        "auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid/auth/htpasswd" in lines
    )
    assert "acl allowed_clients src 10.0.0.0/8" in lines
    assert "http_access deny private_destinations" in lines


def test_dependents_are_owned_by_the_pod_and_validate() -> None:
    p, s = _objects(), settings_for(expose="node_port")
    secret = manifests.secret_manifest(p, UID, "u1:$2b$06$hash\n", "u1", "pw")
    conf = manifests.configmap_manifest(p, UID, manifests.squid_conf(s, s.proxy_port))
    service = manifests.service_manifest(p, UID, s)
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "pf-p123", "uid": UID, "controller": False}
    for obj in (secret, conf, service):
        _validate(obj)
        assert obj["metadata"]["name"] == "pf-p123"
        assert obj["metadata"]["ownerReferences"] == [owner]
        assert obj["metadata"]["labels"]["proxyfleet.io/installation"] == "inst-1"
    assert manifests.decode_secret(secret["data"]) == {
        "htpasswd": "u1:$2b$06$hash\n",
        "username": "u1",
        "password": "pw",
    }
    assert conf["data"]["squid.conf"].startswith("# Generated by proxyfleet")
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["selector"] == {
        "proxyfleet.io/installation": "inst-1",
        "proxyfleet.io/proxy-id": "p123",
    }
    assert service["spec"]["ports"] == [
        {"name": "proxy", "port": 3128, "targetPort": 3128, "protocol": "TCP"}
    ]
    assert service["spec"]["externalTrafficPolicy"] == "Local"


def test_a_load_balancer_service_takes_the_source_ranges() -> None:
    s = settings_for(expose="load_balancer", source_ranges=["203.0.113.0/24"])
    service = manifests.service_manifest(_objects(), UID, s)
    _validate(service)
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]


def test_decode_secret_skips_what_is_not_base64() -> None:
    good = base64.b64encode(b"x").decode()
    assert manifests.decode_secret({"a": good, "b": "%%%"}) == {"a": "x"}
    assert manifests.decode_secret(None) == {}


# ---- classification ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "kind", "code", "retry_after", "text"),
    [
        (ApiFailure(429, "TooManyRequests", "slow down", 7.0), Kind.TEMPORARY, "http_429", 7.0,
         "rate limited"),
        (ApiFailure(429, "TooManyRequests", "slow down"), Kind.TEMPORARY, "http_429", 1.0, "429"),
        (ApiFailure(500, "InternalError", "etcd timeout"), Kind.TEMPORARY, "http_500", None,
         "etcd timeout"),
        (ApiFailure(503, "ServiceUnavailable", "", 3.0), Kind.TEMPORARY, "http_503", 3.0, "503"),
        (ApiFailure(504, "Timeout", "deadline"), Kind.TEMPORARY, "http_504", None, "deadline"),
        (ApiFailure(None, "MaxRetryError"), Kind.TEMPORARY, "no_response", None, "no answer"),
        (ApiFailure(0, "SSLError"), Kind.TEMPORARY, "no_response", None, "no answer"),
        (ApiFailure(403, "Forbidden", 'pods "pf-p1" is forbidden: exceeded quota: pods, '
                    "requested: pods=1, used: pods=2, limited: pods=2"),
         Kind.PERMANENT, "quota", None, "ResourceQuota exceeded: .*exceeded quota: pods"),
        (ApiFailure(403, "Forbidden", 'pods is forbidden: User "x" cannot create'),
         Kind.PERMANENT, "forbidden", None, "cannot create"),
        (ApiFailure(422, "Invalid", 'Pod "pf-p1" is invalid: spec.containers[0].image: Required'),
         Kind.PERMANENT, "invalid", None, "spec.containers.0..image: Required"),
        (ApiFailure(401, "Unauthorized", ""), Kind.PERMANENT, "unauthorized", None, "401"),
        (ApiFailure(400, "BadRequest", "bad"), Kind.PERMANENT, "http_400", None, "bad"),
        (ApiFailure(404, "NotFound", "gone"), Kind.NOT_FOUND, "not_found", None, "gone"),
        (ApiFailure(409, "AlreadyExists", "exists"), Kind.EXISTS, "AlreadyExists", None, "exists"),
        (ApiFailure(410, "Expired", "too old"), Kind.GONE, "gone", None, "too old"),
    ],
)  # fmt: skip
def test_classification(
    failure: ApiFailure, kind: Kind, code: str, retry_after: float | None, text: str
) -> None:
    c = classify(failure, "create pods proxies/pf-p1")
    assert (c.kind, c.code, c.retry_after) == (kind, code, retry_after)
    assert c.message.startswith("create pods proxies/pf-p1: ")
    assert re.search(text, c.message), c.message


def test_status_body() -> None:
    body = (
        '{"kind":"Status","reason":"TooManyRequests","message":"m",'
        '"details":{"retryAfterSeconds":4}}'
    )
    assert status_body(body) == ("TooManyRequests", "m", 4.0)
    assert status_body("<html>") == ("", "", None)
    assert status_body(None) == ("", "", None)
    assert status_body("[1]") == ("", "", None)


# ---- pod status ----------------------------------------------------------------------


def _waiting(reason: str, message: str = "") -> dict[str, Any]:
    state = {"waiting": {"reason": reason, "message": message}}
    return {"phase": "Pending", "containerStatuses": [{"name": "squid", "state": state}]}


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ({"phase": "Running", "podIP": "10.1.2.3"}, ""),
        (_waiting("ContainerCreating"), ""),
        (_waiting("ImagePullBackOff", 'Back-off pulling image "x"'),
         'ImagePullBackOff: Back-off pulling image "x"'),
        (_waiting("ErrImagePull", "not found"), "ErrImagePull: not found"),
        (_waiting("CrashLoopBackOff", "back-off 10s"), "CrashLoopBackOff: back-off 10s"),
        ({"phase": "Running", "containerStatuses": [{"name": "squid",
          "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]},
         "OOMKilled: container squid exceeded its memory limit"),
        ({"phase": "Running", "containerStatuses": [{"name": "squid",
          "state": {"terminated": {"reason": "OOMKilled"}}}]},
         "OOMKilled: container squid exceeded its memory limit"),
        ({"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory."},
         "Evicted: The node was low on memory."),
        ({"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "True",
          "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}]},
         "Evicted (EvictionByEvictionAPI): Eviction API: evicting"),
    ],
)  # fmt: skip
def test_failure_reasons(status: dict[str, Any], reason: str) -> None:
    assert failure_reason(status) == reason


def test_pod_state_reads_address_readiness_and_ages() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "pf-p1", "uid": UID, "resourceVersion": "42",
                     "labels": names.labels("inst-1", "cluster", "p1", {}),
                     "annotations": {names.ANNOTATION_CREATED: "1700000000.250"},
                     "creationTimestamp": "2026-01-02T03:04:05Z"},
        "status": {"phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.0.2.1",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip
    s = pod_state(pod)
    assert (s.name, s.uid, s.proxy_id, s.installation_id) == ("pf-p1", UID, "p1", "inst-1")
    assert (s.pod_ip, s.host_ip, s.ready, s.failure, s.deleting) == (
        "10.1.2.3",
        "192.0.2.1",
        True,
        "",
        False,
    )
    assert s.created_at == 1700000000.25
    del pod["metadata"]["annotations"]
    pod["metadata"]["deletionTimestamp"] = "2026-01-02T03:05:00Z"
    s = pod_state(pod)
    assert s.created_at == parse_timestamp("2026-01-02T03:04:05Z") == 1767323045.0
    assert s.deleting
    pod["status"]["phase"] = "Failed"
    assert pod_state(pod).failure == ""  # killed by the delete, not failed
    assert parse_timestamp("yesterday") == parse_timestamp("") == 0.0


# ---- orphans -------------------------------------------------------------------------


def test_orphans_are_the_old_objects_without_their_pod() -> None:
    found = [
        Leftover("secrets", "pf-a", "a", 100.0),  # pod alive
        Leftover("secrets", "pf-b", "b", 100.0),  # orphan, old
        Leftover("configmaps", "pf-c", "c", 950.0),  # orphan, too young
        Leftover("services", "pf-d", "d", 0.0),  # orphan, no timestamp: old
    ]
    due = orphans(found, {"pf-a"}, now=1000.0, min_age=60.0)
    assert [o.name for o in due] == ["pf-b", "pf-d"]
