"""Requests to API operations: which (verb, resource, group) a path and method are; what
each answers is operations.py's. No sockets here: server.py turns a `Reply` or a
`WatchReply` into bytes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import discovery
from .custom import CustomKind
from .errors import KubeError
from .events import Event, Watcher
from .kinds import Kind
from .objects import KINDS, Json
from .store import Store

_CORE = re.compile(
    r"/api/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[a-z]+))?)?/?"
)
_GROUPED = re.compile(
    r"/apis/(?P<group>[^/]+)/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+))?"
    r"/(?P<resource>[a-z0-9]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[a-z]+))?)?/?"
)
SUBRESOURCES = {"status", "log"}
NOT_FOUND = "the server could not find the requested resource"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    content_type: str
    verb: str = ""
    resource: str = ""
    """Plural, with its subresource ("pods/status"), as RBAC names it."""
    namespace: str = ""
    name: str = ""
    group: str = ""
    version: str = "v1"
    key: str = ""
    """The store's name of the resource: its plural, `.group` beyond core."""

    @property
    def sub(self) -> str:
        return self.resource.partition("/")[2]


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
    api_version: str = "v1"


def classify(req: Request, store: Store) -> None:
    """Fill in the request's RBAC verb, resource, group, namespace and name (or raise 404)."""
    req.path = req.path.rstrip("/") or "/"
    if discovery.is_discovery(req.path):
        req.verb = "get"
        return
    if (m := _CORE.fullmatch(req.path)) is not None:
        resource, name, sub = m.group("resource"), m.group("name") or "", m.group("sub") or ""
        if m.group("ns") is None and resource == "namespaces" and name:
            req.verb, req.resource, req.name = "get", "namespaces", name  # GET a namespace
            return
        if resource not in KINDS or (sub and (sub not in SUBRESOURCES or resource != "pods")):
            raise KubeError(404, "NotFound", NOT_FOUND)
        req.key = resource
    elif (m := _GROUPED.fullmatch(req.path)) is not None:
        resource, name, sub = m.group("resource"), m.group("name") or "", m.group("sub") or ""
        req.group, req.version = m.group("group"), m.group("version")
        kind = _grouped_kind(store, req.group, req.version, resource)
        subs = {"status"} if kind.status_subresource else set()
        if isinstance(kind, CustomKind) and kind.scale is not None:
            subs.add("scale")
        namespaced = m.group("ns") is not None
        if (sub and sub not in subs) or (namespaced and not kind.namespaced):
            raise KubeError(404, "NotFound", NOT_FOUND)
        if kind.namespaced and name and not namespaced:
            raise KubeError(404, "NotFound", NOT_FOUND)
        req.key = kind.key
    else:
        raise KubeError(404, "NotFound", NOT_FOUND)
    req.resource = f"{resource}/{sub}" if sub else resource
    req.namespace = m.group("ns") or ""
    req.name = name
    collection = not name
    req.verb = {
        ("GET", True): "watch" if truthy(req.query.get("watch")) else "list",
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


def _grouped_kind(store: Store, group: str, version: str, plural: str) -> Kind:
    with store.lock:
        for kind in store.kinds.values():
            served = version in kind.versions if isinstance(kind, CustomKind) else version == "v1"
            if kind.group == group and kind.plural == plural and served:
                return kind
    raise KubeError(404, "NotFound", NOT_FOUND)


def truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")
