"""Discovery as the API server answers it (the legacy documents; a client asking for the
aggregated form gets these, as from a server without it): /version, /api, /api/v1, /apis,
/apis/{group} and /apis/{group}/{version}, with the CRDs' groups and resources as they
are served now. Pure: no I/O."""

from __future__ import annotations

import re

from . import errors
from .crds import GROUP as CRD_GROUP
from .crds import CrdKind
from .custom import CustomKind
from .objects import KINDS, Json

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
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]


def document(path: str, address: str, custom: list[CustomKind]) -> Json:
    """The discovery document at `path` (404 for a group or version not served)."""
    if path == "/version":
        return VERSION
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }
    if path == "/api/v1":
        return _resource_list("v1", _core_resources())
    groups = _groups(custom)
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}
    parts = path.split("/")[2:]
    group = groups.get(parts[0])
    if group is None or (len(parts) == 2 and parts[1] not in _versions_of(group)):
        raise errors.KubeError(404, "NotFound", "the server could not find the requested resource")
    if len(parts) == 1:
        return {"kind": "APIGroup", "apiVersion": "v1", **group}
    version = parts[1]
    if parts[0] == CRD_GROUP:
        return _resource_list(f"{CRD_GROUP}/v1", _resources(CrdKind(), namespaced=False))
    kinds = [k for k in custom if k.group == parts[0] and version in k.versions]
    return _resource_list(
        f"{parts[0]}/{version}", [r for k in kinds for r in _resources(k, k.namespaced)]
    )


def is_discovery(path: str) -> bool:
    return path in ("/version", "/api", "/api/v1", "/apis") or bool(
        re.fullmatch(r"/apis/[^/]+(/[^/]+)?", path)
    )


def _core_resources() -> list[Json]:
    # Namespaces: each one exists and can be read (no list, watch or write here).
    resources: list[Json] = [
        {"name": "namespaces", "singularName": "namespace", "namespaced": False,
         "kind": "Namespace", "verbs": ["get"]}
    ]  # fmt: skip
    for plural, kind in KINDS.items():
        resources.append(
            {
                "name": plural,
                "singularName": kind.lower(),
                "namespaced": True,
                "kind": kind,
                "verbs": VERBS,
            }
        )
        if plural in ("pods", "services"):
            resources.append(
                {
                    "name": f"{plural}/status",
                    "singularName": "",
                    "namespaced": True,
                    "kind": kind,
                    "verbs": SUB_VERBS,
                }
            )
    return resources


def _resources(kind: CustomKind | CrdKind, namespaced: bool) -> list[Json]:
    names: Json = kind.names if isinstance(kind, CustomKind) else {}
    main: Json = {
        "name": kind.plural,
        "singularName": names.get("singular", kind.kind.lower()),
        "namespaced": namespaced,
        "kind": kind.kind,
        "verbs": VERBS,
    }
    for key, field in (("shortNames", "shortNames"), ("categories", "categories")):
        if names.get(key):
            main[field] = list(names[key])
    out = [main]
    if kind.status_subresource:
        out.append(
            {
                "name": f"{kind.plural}/status",
                "singularName": "",
                "namespaced": namespaced,
                "kind": kind.kind,
                "verbs": SUB_VERBS,
            }
        )
    if isinstance(kind, CustomKind) and kind.scale is not None:
        out.append(
            {
                "name": f"{kind.plural}/scale",
                "singularName": "",
                "namespaced": namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": SUB_VERBS,
            }
        )
    return out


def _resource_list(group_version: str, resources: list[Json]) -> Json:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _groups(custom: list[CustomKind]) -> dict[str, Json]:
    """Each group served: its versions, preferred (highest priority) first."""
    versions: dict[str, set[str]] = {CRD_GROUP: {"v1"}}
    for kind in custom:
        versions.setdefault(kind.group, set()).update(kind.versions)
    out: dict[str, Json] = {}
    for group, found in versions.items():
        ordered = sorted(found, key=priority, reverse=True)
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in ordered]
        out[group] = {"name": group, "versions": entries, "preferredVersion": entries[0]}
    return out


def _versions_of(group: Json) -> set[str]:
    return {v["version"] for v in group["versions"]}


def priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order: GA over beta over alpha, then the higher numbers."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (0, 0, 0)
    rank = {"alpha": 1, "beta": 2}.get(m.group(2) or "", 3)
    return (rank, int(m.group(1)), int(m.group(3) or 0))
