"""The Kubernetes objects of one proxy as JSON-shaped dicts (what the API server takes).

A pod running Squid as the image's `proxy` user (uid 13) with a read-only root
filesystem; its squid.conf in a ConfigMap, its htpasswd in a Secret, and a Service of
its own when clients reach it from outside the cluster. The Secret, ConfigMap and Service
are made after the pod and carry an owner reference to it, so deleting the pod deletes
them (the cluster's garbage collector does it). Pure: no I/O.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.common.domain.squid import SquidOptions, render_squid_conf
from proxyfleet.provisioner_k8s.pure import egress, names
from proxyfleet.provisioner_k8s.pure.config import ZONE_LABEL, K8sSettings, Toleration

Manifest = dict[str, Any]

PROXY_UID = 13
"""The `proxy` user and group of Ubuntu's Squid image."""
CONTAINER = "squid"
CONFIG_DIR = "/etc/squid/proxyfleet"
AUTH_DIR = "/etc/squid/auth"
HTPASSWD_PATH = f"{AUTH_DIR}/{names.SECRET_HTPASSWD}"
PID_FILE = "/var/run/squid/squid.pid"
CACHE_LOG = "/dev/stderr"
"""Squid's diagnostics go to the container log (`kubectl logs`)."""
COMMAND = ["squid", "-N", "-f", f"{CONFIG_DIR}/{names.CONFIGMAP_KEY}"]
SCRATCH_DIRS = {
    "run": "/var/run/squid",
    "log": "/var/log/squid",
    "spool": "/var/spool/squid",
    "cache": "/var/cache/squid",
}
"""emptyDir volumes: the only places Squid writes (the root filesystem is read-only)."""
SERVICE_TYPES = {"node_port": "NodePort", "load_balancer": "LoadBalancer"}
SECRET_MODE = 0o440
"""The htpasswd file: readable by the proxy group (fsGroup 13), no one else."""


@dataclass(frozen=True, slots=True)
class ProxyObjects:
    """What every object of one proxy shares."""

    proxy_id: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    zone: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return names.object_name(self.proxy_id)

    def metadata(self, owner_uid: str = "") -> Manifest:
        meta: Manifest = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
        }
        if owner_uid:
            meta["ownerReferences"] = [owner_reference(self.name, owner_uid)]
        return meta


def owner_reference(pod_name: str, pod_uid: str) -> Manifest:
    """The pod as owner (not controller): the garbage collector deletes the object with it."""
    return {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid,
            "controller": False}  # fmt: skip


def squid_conf(s: K8sSettings, port: int) -> str:
    """The shared generator's squid.conf with the pod's paths, listening on `port` (it
    carries max_filedescriptors 1024 and cache_mem 16 MB: without them Squid sizes its
    tables from the container's huge RLIMIT_NOFILE and is OOM-killed at start)."""
    return render_squid_conf(
        SquidOptions(
            http_port=port,
            htpasswd_path=HTPASSWD_PATH,
            pid_file=PID_FILE,
            cache_log=CACHE_LOG,
            connect_ports=list(s.connect_ports),
            deny_private_destinations=s.deny_private_destinations,
            source_ranges=list(s.source_ranges),
        )
    )


def node_selector(s: K8sSettings, zone: str) -> dict[str, str]:
    """The configured node selector, plus the zone's node label when it has one."""
    out = dict(s.node_selector)
    if zone in s.zone_node_labels:
        out[ZONE_LABEL] = s.zone_node_labels[zone]
    return out


def pod_manifest(p: ProxyObjects, s: K8sSettings) -> Manifest:
    """The proxy's pod, as its egress mode wants it (pure/egress.py)."""
    port = egress.listen_port(s, p.proxy_id)
    mounts = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "auth", "mountPath": AUTH_DIR, "readOnly": True},
        *({"name": v, "mountPath": path} for v, path in SCRATCH_DIRS.items()),
    ]
    volumes: list[Manifest] = [
        {"name": "config", "configMap": {"name": p.name, "items": [
            {"key": names.CONFIGMAP_KEY, "path": names.CONFIGMAP_KEY}]}},
        {"name": "auth", "secret": {"secretName": p.name, "defaultMode": SECRET_MODE, "items": [
            {"key": names.SECRET_HTPASSWD, "path": names.SECRET_HTPASSWD}]}},
        *({"name": v, "emptyDir": {}} for v in SCRATCH_DIRS),
    ]  # fmt: skip
    container: Manifest = {
        "name": CONTAINER,
        "image": s.image,
        "imagePullPolicy": s.image_pull_policy,
        "command": list(COMMAND),
        "ports": [{"name": "proxy", "containerPort": port, "protocol": "TCP"}],
        "readinessProbe": {
            "tcpSocket": {"port": port},
            "initialDelaySeconds": 1,
            "periodSeconds": 2,
            "failureThreshold": 3,
        },
        "resources": dict(zip(("requests", "limits"), s.resources.as_text(), strict=True)),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": PROXY_UID,
            "runAsGroup": PROXY_UID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": mounts,
    }
    spec: Manifest = {
        "restartPolicy": "Always",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 5,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": PROXY_UID,
            "runAsGroup": PROXY_UID,
            "fsGroup": PROXY_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    }
    if selector := node_selector(s, p.zone):
        spec["nodeSelector"] = selector
    if s.tolerations:
        spec["tolerations"] = [_toleration(t) for t in s.tolerations]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": p.metadata(), "spec": spec}
    return egress.apply(pod, s)


def secret_manifest(p: ProxyObjects, owner_uid: str, htpasswd: str, username: str,
                    password: str) -> Manifest:  # fmt: skip
    """The htpasswd Squid checks, and the credentials themselves for re-adoption."""
    data = {
        names.SECRET_HTPASSWD: htpasswd,
        names.SECRET_USERNAME: username,
        names.SECRET_PASSWORD: password,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": p.metadata(owner_uid),
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def configmap_manifest(p: ProxyObjects, owner_uid: str, conf: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": p.metadata(owner_uid),
        "data": {names.CONFIGMAP_KEY: conf},
    }


def service_manifest(p: ProxyObjects, owner_uid: str, s: K8sSettings) -> Manifest:
    """A NodePort or LoadBalancer Service selecting the proxy's pod alone. Local traffic
    policy: the client's address reaches Squid unchanged (its source_ranges ACL) and the
    node port answers on the pod's own node, the address handed out."""
    spec: Manifest = {
        "type": SERVICE_TYPES[s.expose],
        "selector": {
            names.LABEL_INSTALLATION: p.labels[names.LABEL_INSTALLATION],
            names.LABEL_PROXY: p.proxy_id,
        },
        "ports": [{"name": "proxy", "port": s.proxy_port, "targetPort": s.proxy_port,
                   "protocol": "TCP"}],
        "externalTrafficPolicy": "Local",
    }  # fmt: skip
    if s.expose == "load_balancer" and s.source_ranges:
        spec["loadBalancerSourceRanges"] = list(s.source_ranges)
    return {"apiVersion": "v1", "kind": "Service", "metadata": p.metadata(owner_uid),
            "spec": spec}  # fmt: skip


def decode_secret(data: Mapping[str, str] | None) -> dict[str, str]:
    """A Secret's `data` (base64 values) as text; undecodable values are left out."""
    out = {}
    for key, value in (data or {}).items():
        try:
            out[key] = base64.b64decode(value, validate=True).decode()
        except ValueError:
            continue
    return out


def _toleration(t: Toleration) -> Manifest:
    out: Manifest = {"operator": t.operator}
    if t.key:
        out["key"] = t.key
    if t.value:
        out["value"] = t.value
    if t.effect:
        out["effect"] = t.effect
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out
