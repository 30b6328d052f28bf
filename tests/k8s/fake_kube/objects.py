"""The resources this fake serves and what the API server fills in on create. Pure: no I/O
(the time and the uid come from the caller)."""

from __future__ import annotations

import base64
import binascii
import copy
import time
from typing import Any

from .errors import bad_request

Json = dict[str, Any]

KINDS = {
    "pods": "Pod",
    "secrets": "Secret",
    "configmaps": "ConfigMap",
    "services": "Service",
    "events": "Event",
}
"""Resource (plural, as in URLs and RBAC rules) → kind."""
RETURNS_OBJECT_ON_DELETE = {"pods", "services"}
"""Deletes of these answer the object; the others answer a Status (as the real server)."""
HAS_STATUS = {"pods", "services"}
NODE_NAME = "fake-node"


def rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def prepare_new(
    resource: str, namespace: str, body: Json, *, name: str, uid: str, now: float
) -> Json:
    """`body` as stored: metadata filled in, defaults set, status reset (ignored on create)."""
    obj = copy.deepcopy(body)
    obj["apiVersion"] = "v1"
    obj["kind"] = KINDS[resource]
    meta = obj.setdefault("metadata", {})
    meta.update(name=name, namespace=namespace, uid=uid, creationTimestamp=rfc3339(now))
    for system in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(system, None)
    if resource in HAS_STATUS:
        meta["generation"] = 1
    if resource == "pods":
        _default_pod(obj)
    elif resource == "secrets":
        _default_secret(obj)
    elif resource == "services":
        _default_service(obj)
    return obj


def _default_pod(pod: Json) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("securityContext", {})
    # spec.nodeName: the scheduler's (scheduler.py), unless the body names a node.
    for c in spec.get("containers") or []:
        image = str(c.get("image", ""))
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        for port in c.get("ports") or []:
            port.setdefault("protocol", "TCP")
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None}],
        "qosClass": qos_class(spec.get("containers") or []),
    }


def qos_class(containers: list[Json]) -> str:
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(k)
        and (r.get("requests") or r.get("limits") or {}).get(k) == (r.get("limits") or {}).get(k)
        for r in resources
        for k in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _default_secret(secret: Json) -> None:
    secret.setdefault("type", "Opaque")
    data = secret.get("data") or {}
    for key, value in data.items():
        try:
            base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise bad_request(
                f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data '
                f"at input byte 0 (key {key})"
            ) from None
    string_data = secret.pop("stringData", None) or {}
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    if data:
        secret["data"] = data


def _default_service(service: Json) -> None:
    spec = service.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    service["status"] = {"loadBalancer": {}}


def merge_for_update(resource: str, current: Json, body: Json, subresource: str) -> Json:
    """What a PUT stores: system fields kept from `current`; on the main resource the
    status is kept (it is written through /status), on /status only the status changes."""
    if subresource == "status":
        out = copy.deepcopy(current)
        out["status"] = copy.deepcopy(body.get("status") or {})
        return out
    out = copy.deepcopy(body)
    out["apiVersion"], out["kind"] = "v1", KINDS[resource]
    meta = out.setdefault("metadata", {})
    cur_meta = current["metadata"]
    for system in (
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ):
        if system in cur_meta:
            meta[system] = cur_meta[system]
        else:
            meta.pop(system, None)
    if resource in HAS_STATUS:
        out["status"] = copy.deepcopy(current.get("status") or {})
        if out.get("spec") != current.get("spec"):
            meta["generation"] = int(cur_meta.get("generation", 1)) + 1
    if resource == "pods":
        out.setdefault("spec", {})["nodeName"] = current["spec"].get("nodeName")
    if resource == "secrets" and "stringData" in out:
        _default_secret(out)
    return out
