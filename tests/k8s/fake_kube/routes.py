"""Requests to API operations: which (verb, resource) a path and method are, and what each
answers. No sockets here: server.py turns a `Reply` or a `WatchReply` into bytes."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .errors import KubeError
from .events import Event, Watcher, watch_since
from .faults import Faults
from .objects import KINDS, Json
from .patch import apply_patch
from .selectors import object_filter
from .store import Store

_PATH = re.compile(
    r"/api/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[a-z]+))?)?/?"
)
SUBRESOURCES = {"status", "log"}
VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0-proxyfleet-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    content_type: str
    verb: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass
class Reply:
    code: int
    body: Json | str
    """JSON, or text (a pod's log)."""
    headers: dict[str, str] = field(default_factory=dict)


Logs = Callable[[str, str, int | None], str | None]
"""(namespace, pod, tailLines) → its container's log, None when it has not started."""


@dataclass
class WatchReply:
    watcher: Watcher
    first: list[Event]
    keep: Any
    timeout: float | None
    bookmarks: bool
    kind: str


def classify(req: Request) -> None:
    """Fill in the request's RBAC verb, resource, namespace and name (or raise 404)."""
    req.path = req.path.rstrip("/") or "/"
    if req.path in ("/api", "/apis", "/version", "/api/v1"):
        req.verb = "get"
        return
    m = _PATH.fullmatch(req.path)
    if m is None:
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    resource, name, sub = m.group("resource"), m.group("name") or "", m.group("sub") or ""
    if m.group("ns") is None and resource == "namespaces" and name:
        req.verb, req.resource, req.name = "get", "namespaces", name  # GET a namespace
        return
    if resource not in KINDS or (sub and (sub not in SUBRESOURCES or resource != "pods")):
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    req.resource = f"{resource}/{sub}" if sub else resource
    req.namespace = m.group("ns") or ""
    req.name = name
    collection = not name
    req.verb = {
        ("GET", True): "watch" if _truthy(req.query.get("watch")) else "list",
        ("GET", False): "get",
        ("POST", True): "create",
        ("PUT", False): "update",
        ("PATCH", False): "patch",
        ("DELETE", False): "delete",
        ("DELETE", True): "deletecollection",
    }.get((req.method, collection), "")
    if not req.verb:
        raise KubeError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )


def handle(
    req: Request, store: Store, faults: Faults, server_address: str, logs: Logs
) -> Reply | WatchReply:
    if req.path == "/version":
        return Reply(200, VERSION)
    if req.path in ("/api", "/apis", "/api/v1"):
        return Reply(200, _discovery(req.path, server_address))
    if req.resource == "namespaces":
        return Reply(200, _namespace(req.name))
    resource, _, sub = req.resource.partition("/")
    ns = req.namespace
    if req.verb in ("list", "watch"):
        keep = object_filter(req.query.get("labelSelector"), req.query.get("fieldSelector"))
        if req.verb == "watch":
            timeout = req.query.get("timeoutSeconds")
            watcher, first = store.watch(
                resource, ns or None, watch_since(req.query.get("resourceVersion")), keep
            )
            return WatchReply(
                watcher,
                first,
                keep,
                float(timeout) if timeout else None,
                _truthy(req.query.get("allowWatchBookmarks")),
                KINDS[resource],
            )
        items, rv = store.list_objects(resource, ns or None, keep)
        return Reply(200, _page(resource, items, rv, req.query))
    if req.verb == "get" and sub == "log":
        return Reply(200, _log(store, logs, ns, req.name, req.query))
    if req.verb == "get":
        obj = store.get(resource, ns, req.name)
        return Reply(200, obj)
    if req.verb == "create":
        body = _object_body(req)
        body_ns = (body.get("metadata") or {}).get("namespace")
        if body_ns not in (None, "", ns):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        with store.lock:  # the quota's count and the create as one step
            if resource == "pods":
                used = len(store.list_objects("pods", ns, _counts_for_quota)[0])
                faults.check_quota(ns, str((body.get("metadata") or {}).get("name", "")), used)
            return Reply(201, store.create(resource, ns, body))
    if req.verb == "update":
        return Reply(200, store.update(resource, ns, req.name, _object_body(req), sub))
    if req.verb == "patch":
        with store.lock:  # a patch never conflicts with a change it did not name
            current = store.get(resource, ns, req.name)
            patched = apply_patch(req.content_type, current, req.body)
            if sub == "status":
                patched = {**current, "status": patched.get("status")}
            wanted = (patched.get("metadata") or {}).get("resourceVersion")
            if wanted != current["metadata"]["resourceVersion"]:
                raise errors.conflict(resource, req.name)
            return Reply(200, store.update(resource, ns, req.name, patched, sub))
    if req.verb == "delete":
        options = req.body if isinstance(req.body, dict) else {}
        for key in ("gracePeriodSeconds", "propagationPolicy", "orphanDependents"):
            if key in req.query and key not in options:
                value: Any = req.query[key]
                options[key] = int(value) if key == "gracePeriodSeconds" else value
        answer = store.delete(resource, ns, req.name, options)
        return Reply(200, answer)
    if req.verb == "deletecollection":
        keep = object_filter(req.query.get("labelSelector"), req.query.get("fieldSelector"))
        options = req.body if isinstance(req.body, dict) else {}
        for obj in store.list_objects(resource, ns, keep)[0]:
            try:
                store.delete(resource, ns, obj["metadata"]["name"], options)
            except KubeError as exc:
                if exc.code != 404:
                    raise
        return Reply(
            200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        )
    raise KubeError(405, "MethodNotAllowed", "the server does not allow this method")


def _counts_for_quota(pod: Json) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _log(store: Store, logs: Logs, ns: str, name: str, query: dict[str, str]) -> str:
    pod = store.get("pods", ns, name)
    tail = int(query["tailLines"]) if query.get("tailLines") else None
    text = logs(ns, name, tail)
    if text is None:
        container = query.get("container") or pod["spec"]["containers"][0].get("name", "")
        raise errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
        )
    return text


def _object_body(req: Request) -> Json:
    if not isinstance(req.body, dict):
        raise errors.bad_request("the body of the request was not a JSON object")
    kind = req.body.get("kind")
    expected = KINDS[req.resource.partition("/")[0]]
    if kind not in (None, expected):
        raise errors.bad_request(f'{kind} in version "v1" cannot be handled as a {expected}')
    return req.body


def _page(resource: str, items: list[Json], rv: int, query: dict[str, str]) -> Json:
    start = 0
    if token := query.get("continue"):
        try:
            state = json.loads(base64.b64decode(token))
            start = int(state["start"])
        except (ValueError, KeyError, TypeError):
            raise KubeError(410, "Expired", "The provided continue parameter is too old") from None
    meta: Json = {"resourceVersion": str(rv)}
    limit = int(query.get("limit") or 0)
    if limit > 0 and start + limit < len(items):
        meta["continue"] = base64.b64encode(json.dumps({"start": start + limit}).encode()).decode()
        meta["remainingItemCount"] = len(items) - start - limit
        page = items[start : start + limit]
    else:
        page = items[start:]
    return {"kind": f"{KINDS[resource]}List", "apiVersion": "v1", "metadata": meta, "items": page}


def _discovery(path: str, address: str) -> Json:
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    resources: list[Json] = []
    for plural, kind in KINDS.items():
        resources.append(
            {
                "name": plural,
                "singularName": kind.lower(),
                "namespaced": True,
                "kind": kind,
                "verbs": verbs,
            }
        )
        if plural in ("pods", "services"):
            resources.append(
                {
                    "name": f"{plural}/status",
                    "singularName": "",
                    "namespaced": True,
                    "kind": kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return {"kind": "APIResourceList", "groupVersion": "v1", "resources": resources}


def _namespace(name: str) -> Json:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")
