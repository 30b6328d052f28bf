"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
patch (strategic.py). Pure: no I/O."""

from __future__ import annotations

import copy
from typing import Any

from .errors import KubeError, bad_request
from .strategic import strategic_merge

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """`target` (not changed) with `patch` applied as `content_type` says."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in (MERGE, STRATEGIC):
        if not isinstance(patch, dict):
            raise bad_request(
                "json: cannot unmarshal array into Go value of type map[string]interface {}"
            )
        result = (merge_patch if kind == MERGE else strategic_merge)(target, patch)
        assert isinstance(result, dict)
        return result
    if kind == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        return json_patch(target, patch)
    raise KubeError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE}, {STRATEGIC}",
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: list[Any]) -> dict[str, Any]:
    """RFC 6902: add, remove, replace, move, copy, test; an operation that cannot apply
    fails the whole patch (422, as the API server answers)."""
    doc: Any = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request("json patch: each operation needs 'op' and 'path'")
        name, path = op["op"], _pointer(op["path"])
        if name == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif name == "remove":
            _remove(doc, path)
        elif name == "replace":
            _get(doc, path)
            _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif name in ("move", "copy"):
            source = _pointer(str(op.get("from", "")))
            value = copy.deepcopy(_get(doc, source))
            if name == "move":
                _remove(doc, source)
            doc = _add(doc, path, value)
        elif name == "test":
            if _get(doc, path) != op.get("value"):
                raise _failed(f"testing value {op['path']} failed")
        else:
            raise bad_request(f"Unexpected kind: {name}")
    if not isinstance(doc, dict):
        raise _failed("the patch replaced the whole object with a non-object")
    return doc


def _failed(why: str) -> KubeError:
    return KubeError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {why}"
    )


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise bad_request(f"json patch: invalid path {text!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")]


def _parent(doc: Any, path: list[str]) -> Any:
    cur = doc
    for part in path[:-1]:
        cur = _child(cur, part, path)
    return cur


def _child(cur: Any, part: str, path: list[str]) -> Any:
    if isinstance(cur, dict) and part in cur:
        return cur[part]
    if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
        return cur[int(part)]
    raise _failed(f"doc is missing path: /{'/'.join(path)}")


def _get(doc: Any, path: list[str]) -> Any:
    cur = doc
    for part in path:
        cur = _child(cur, part, path)
    return cur


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _failed(f"index out of range: /{'/'.join(path)}")
    else:
        raise _failed(f"doc is missing path: /{'/'.join(path)}")
    return doc


def _remove(doc: Any, path: list[str]) -> None:
    if not path:
        raise _failed("cannot remove the whole document")
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _failed(f"doc is missing path: /{'/'.join(path)}")
