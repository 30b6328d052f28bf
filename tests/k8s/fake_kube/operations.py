"""What each API operation answers, for every resource the store holds (core/v1, CRDs and
custom resources alike): discovery, list and watch, get, create, update, patch (a custom
resource takes merge and JSON patches, not strategic ones, as the real server), delete and
deletecollection, and a custom resource's `scale` subresource. Writes take
`fieldValidation` (a Warning header per unknown field dropped, or 400 with Strict)."""

from __future__ import annotations

import base64
import json
from typing import Any

from . import discovery, errors
from .crds import CrdController
from .custom import CustomKind
from .errors import KubeError
from .events import watch_since
from .faults import Faults
from .kinds import FieldValidation, Kind
from .objects import Json
from .patch import STRATEGIC, apply_patch
from .routes import Logs, Reply, Request, WatchReply, truthy
from .selectors import object_filter
from .store import Store


def handle(
    req: Request, store: Store, faults: Faults, server_address: str, logs: Logs
) -> Reply | WatchReply:
    if discovery.is_discovery(req.path):
        served = CrdController.served_by(store)
        return Reply(200, discovery.document(req.path, server_address, served))
    if req.resource == "namespaces":
        return Reply(200, _namespace(req.name))
    kind = store.kind(req.key)
    key, sub, ns = req.key, req.sub, req.namespace
    if req.verb in ("list", "watch"):
        keep = object_filter(req.query.get("labelSelector"), req.query.get("fieldSelector"))
        if req.verb == "watch":
            timeout = _seconds(req.query.get("timeoutSeconds"))
            since = watch_since(req.query.get("resourceVersion"))
            watcher, first = store.watch(key, ns or None, since, keep)
            return WatchReply(
                watcher,
                first,
                keep,
                timeout,
                truthy(req.query.get("allowWatchBookmarks")),
                kind.kind,
                kind.api_version(req.version),
            )
        items, rv = store.list_objects(key, ns or None, keep)
        return Reply(200, _page(kind, req.version, items, rv, req.query))
    if sub == "scale":
        return _scale(req, store, _custom(kind))
    if req.verb == "get" and sub == "log":
        return Reply(200, _log(store, logs, ns, req.name, req.query))
    if req.verb == "get":
        return Reply(200, store.get(key, ns, req.name))
    fv = FieldValidation.of(req.query.get("fieldValidation"))
    if req.verb == "create":
        body = _object_body(req, kind)
        body_ns = (body.get("metadata") or {}).get("namespace")
        if body_ns not in (None, "", ns):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        with store.lock:  # the quota's count and the create as one step
            if key == "pods":
                used = len(store.list_objects("pods", ns, _counts_for_quota)[0])
                faults.check_quota(ns, str((body.get("metadata") or {}).get("name", "")), used)
            made = store.create(key, ns, body, fv)
        return Reply(201, made, _warnings(fv))
    if req.verb == "update":
        updated = store.update(key, ns, req.name, _object_body(req, kind), sub, fv)
        return Reply(200, updated, _warnings(fv))
    if req.verb == "patch":
        if kind.group and req.content_type.split(";")[0].strip() == STRATEGIC:
            raise _no_strategic()
        with store.lock:  # a patch never conflicts with a change it did not name
            current = store.get(key, ns, req.name)
            patched = apply_patch(req.content_type, current, req.body)
            if sub == "status":
                patched = {**current, "status": patched.get("status")}
            wanted = (patched.get("metadata") or {}).get("resourceVersion")
            if wanted != current["metadata"]["resourceVersion"]:
                raise errors.conflict(key, req.name)
            return Reply(200, store.update(key, ns, req.name, patched, sub, fv), _warnings(fv))
    if req.verb == "delete":
        options = req.body if isinstance(req.body, dict) else {}
        for name in ("gracePeriodSeconds", "propagationPolicy", "orphanDependents"):
            if name in req.query and name not in options:
                value: Any = req.query[name]
                options[name] = int(value) if name == "gracePeriodSeconds" else value
        return Reply(200, store.delete(key, ns, req.name, options))
    if req.verb == "deletecollection":
        keep = object_filter(req.query.get("labelSelector"), req.query.get("fieldSelector"))
        options = req.body if isinstance(req.body, dict) else {}
        for obj in store.list_objects(key, ns, keep)[0]:
            try:
                store.delete(key, ns, obj["metadata"]["name"], options)
            except KubeError as exc:
                if exc.code != 404:
                    raise
        return Reply(
            200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        )
    raise KubeError(405, "MethodNotAllowed", "the server does not allow this method")


def _scale(req: Request, store: Store, kind: CustomKind) -> Reply:
    """GET, PUT or PATCH a custom resource's Scale: a write sets specReplicasPath (a spec
    change: generation rises, the schema applies) and answers the new Scale."""
    with store.lock:
        current = store.get(kind.key, req.namespace, req.name)
        scale = kind.get_scale(current)
        if req.verb == "get":
            return Reply(200, scale)
        if req.verb == "update":
            wanted = _object_body(req, None)
        else:
            wanted = apply_patch(req.content_type, scale, req.body)
        version = (wanted.get("metadata") or {}).get("resourceVersion")
        if version not in (None, "", scale["metadata"]["resourceVersion"]):
            raise errors.conflict(kind.key, req.name)
        updated = store.update(
            kind.key, req.namespace, req.name, kind.with_replicas(current, wanted)
        )
        return Reply(200, kind.get_scale(updated))


def _seconds(value: str | None) -> float | None:
    """A watch's timeoutSeconds: an integer, as the API server parses it."""
    if not value:
        return None
    try:
        return float(int(value))
    except ValueError:
        raise errors.bad_request(
            f'timeoutSeconds: Invalid value: "{value}": must be an integer'
        ) from None


def _custom(kind: Kind) -> CustomKind:
    assert isinstance(kind, CustomKind)  # classify lets /scale through for these alone
    return kind


def _no_strategic() -> KubeError:
    return KubeError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )


def _warnings(fv: FieldValidation) -> dict[str, str]:
    if not fv.warnings:
        return {}
    return {"Warning": ", ".join(f"299 - {json.dumps(w)}" for w in fv.warnings)}


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


def _object_body(req: Request, kind: Kind | None) -> Json:
    if not isinstance(req.body, dict):
        raise errors.bad_request("the body of the request was not a JSON object")
    if kind is None:  # a Scale
        return req.body
    got, expected = req.body.get("kind"), kind.kind
    if got not in (None, expected):
        raise errors.bad_request(
            f'{got} in version "{req.version}" cannot be handled as a {expected}'
        )
    version = req.body.get("apiVersion")
    if kind.group and version not in (None, kind.api_version(req.version)):
        raise errors.bad_request(
            f"the API version in the data ({version}) does not match the expected API version "
            f"({kind.api_version(req.version)})"
        )
    return req.body


def _page(kind: Kind, version: str, items: list[Json], rv: int, query: dict[str, str]) -> Json:
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
    return {
        "kind": f"{kind.kind}List",
        "apiVersion": kind.api_version(version),
        "metadata": meta,
        "items": page,
    }


def _namespace(name: str) -> Json:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
