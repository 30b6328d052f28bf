"""JSON shapes of Compute v1 resources the fake keeps, and the URL forms the API accepts.
Pure: no I/O."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import secrets
import time
from datetime import UTC, datetime
from typing import Any

from .errors import GceError, invalid

API = "https://www.googleapis.com/compute/v1/"
"""selfLinks point where Google's do; the client never follows them."""
NAME = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")
LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
METADATA_KEY = re.compile(r"[a-zA-Z0-9_-]{1,128}")
METADATA_VALUE_MAX = 256 * 1024
METADATA_TOTAL_MAX = 512 * 1024

Json = dict[str, Any]

_serial = itertools.count(1)


def new_id() -> str:
    """A uint64 id; JSON carries 64-bit integers as strings."""
    return str(secrets.randbits(63))


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def operation_name() -> str:
    millis = int(time.time() * 1000)
    return (
        f"operation-{millis}-{secrets.token_hex(7)[:13]}-{secrets.token_hex(4)}-{next(_serial):08x}"
    )


def fingerprint(value: object) -> str:
    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).digest()[:8]
    return base64.b64encode(digest).decode()


def link(project: str, *parts: str) -> str:
    return API + "/".join(["projects", project, *parts])


def region_of(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


def check_name(value: object, field: str = "resource.name") -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise invalid(field, value, f"Must be a match of regex '{NAME.pattern}'")
    return value


def check_labels(labels: object, field: str = "resource.labels") -> dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, dict) or len(labels) > 64:
        raise invalid(field, labels, "Expected at most 64 labels.")
    for key, value in labels.items():
        if not LABEL_KEY.fullmatch(key):
            raise invalid(f"{field}.key", key, "Label keys must match [a-z][a-z0-9_-]{0,62}.")
        if not isinstance(value, str) or not LABEL_VALUE.fullmatch(value):
            raise invalid(f"{field}.value", value, "Label values must match [a-z0-9_-]{0,63}.")
    return dict(labels)


def check_metadata(metadata: object) -> dict[str, Any]:
    metadata = metadata or {}
    if not isinstance(metadata, dict):
        raise invalid("resource.metadata", metadata, "Expected an object.")
    items = metadata.get("items") or []
    total = 0
    for i, item in enumerate(items):
        key, value = item.get("key"), item.get("value", "")
        if not isinstance(key, str) or not METADATA_KEY.fullmatch(key):
            raise invalid(f"resource.metadata.items[{i}].key", key, "Must match [a-zA-Z0-9_-].")
        size = len(str(value).encode())
        if size > METADATA_VALUE_MAX:
            raise invalid(f"resource.metadata.items[{i}].value", "...", "Value too large.")
        total += size + len(key)
    if total > METADATA_TOTAL_MAX:
        raise GceError(400, "invalid", "Metadata total size exceeds 512 KB.")
    return {"kind": "compute#metadata", "fingerprint": fingerprint(items), "items": list(items)}


def metadata_value(instance: dict[str, Any], key: str) -> str | None:
    for item in instance.get("metadata", {}).get("items", []):
        if item.get("key") == key:
            value = item.get("value")
            return value if isinstance(value, str) else None
    return None


def relative(project: str, value: str) -> str:
    """`projects/P/...` for any of the forms the API takes: a full URL, a project-relative
    path, or a path relative to the request's project (`zones/Z/...`, `global/...`)."""
    for prefix in (API, "https://compute.googleapis.com/compute/v1/"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
    if value.startswith("projects/"):
        return value
    return f"projects/{project}/{value}"


def scoped_list_warning(scope: str) -> dict[str, Any]:
    return {
        "code": "NO_RESULTS_ON_PAGE",
        "message": f"There are no results for scope '{scope}' on this page.",
        "data": [{"key": "scope", "value": scope}],
    }


def page_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def page_offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
        return int(text.removeprefix("offset:"))
    except ValueError as exc:
        raise invalid("pageToken", token, "Invalid page token.") from exc


def page(items: list[Any], max_results: str | None, token: str | None) -> tuple[list[Any], str]:
    """One page of `items` and the next page's token ("" on the last page)."""
    size = int(max_results) if max_results else 500
    if not 0 <= size <= 500:
        raise invalid("maxResults", max_results, "Must be between 0 and 500.")
    size = size or 500
    start = page_offset(token)
    chunk = items[start : start + size]
    return chunk, page_token(start + size) if start + size < len(items) else ""


# ---- list shapes (pure) ------------------------------------------------------------------------


def plain_list(project: str, kind: str, path: str, rows: list[Json], query: dict[str, str]) -> Json:
    chunk, token = page(rows, query.get("maxResults"), query.get("pageToken"))
    out: Json = {
        "kind": f"compute#{kind}List",
        "id": f"projects/{project}/{path}",
        "items": chunk,
        "selfLink": link(project, path),
    }
    if token:
        out["nextPageToken"] = token
    return out


def aggregated_list(
    project: str,
    kind: str,
    field: str,
    scopes: list[str],
    rows: list[tuple[str, Json]],
    query: dict[str, str],
) -> Json:
    chunk, token = page(rows, query.get("maxResults"), query.get("pageToken"))
    items: dict[str, Any] = {}
    for scope in scopes:
        found = [r for s, r in chunk if s == scope]
        items[scope] = {field: found} if found else {"warning": scoped_list_warning(scope)}
    out: Json = {
        "kind": f"compute#{kind}AggregatedList",
        "id": f"projects/{project}/aggregated/{field}",
        "items": items,
        "selfLink": link(project, "aggregated", field),
    }
    if token:
        out["nextPageToken"] = token
    return out
