"""Custom resources of a CustomResourceDefinition: filled in and checked against the CRD's
structural schema on every write (unknown fields pruned, values validated), the `status`
subresource (the main resource keeps its status, /status changes nothing else), metadata.
generation raised by a change of anything but metadata and status, and the `scale`
subresource (an autoscaling/v1 Scale over specReplicasPath, statusReplicasPath and
labelSelectorPath). Pure: no I/O."""

from __future__ import annotations

import copy
from typing import Any

from . import errors, objects, structural
from .kinds import FieldValidation, Kind
from .objects import Json

SYSTEM_META = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


class CustomKind(Kind):
    """The resource a CRD defines (one schema per served version; no conversion: every
    version reads the object as stored)."""

    def __init__(self, crd: Json) -> None:
        spec = crd["spec"]
        names = spec["names"]
        self.crd_name = crd["metadata"]["name"]
        self.group, self.plural, self.kind = spec["group"], names["plural"], names["kind"]
        self.key = f"{self.plural}.{self.group}"
        self.names: Json = names
        self.namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        self.versions: dict[str, Json] = {v["name"]: v for v in spec["versions"] if v["served"]}
        self.storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
        subresources: Json = spec["versions"][0].get("subresources") or {}
        self.status_subresource = "status" in subresources
        self.scale: Json | None = subresources.get("scale")

    def api_version(self, version: str = "") -> str:
        return f"{self.group}/{version or self.storage}"

    def schema(self, version: str) -> Json:
        schema: Json = self.versions[version]["schema"]["openAPIV3Schema"]
        return schema

    def prepare(
        self, namespace: str, body: Json, *, name: str, uid: str, now: float, fv: FieldValidation
    ) -> Json:
        obj = copy.deepcopy(body)
        version = self._version_of(obj)
        obj["apiVersion"], obj["kind"] = self.api_version(version), self.kind
        meta = obj.setdefault("metadata", {})
        meta.update(name=name, uid=uid, creationTimestamp=objects.rfc3339(now), generation=1)
        if self.namespaced:
            meta["namespace"] = namespace
        for system in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(system, None)
        if self.status_subresource:
            obj.pop("status", None)  # written through /status only
        return self._checked(obj, version, fv)

    def merge(self, current: Json, body: Json, subresource: str, fv: FieldValidation) -> Json:
        version = self._version_of(current)
        if subresource == "status":
            out = copy.deepcopy(current)
            out["status"] = copy.deepcopy(body.get("status"))
            if out["status"] is None:
                del out["status"]
            return self._checked(out, version, fv)
        out = copy.deepcopy(body)
        out["apiVersion"], out["kind"] = current["apiVersion"], self.kind
        meta = out.setdefault("metadata", {})
        for key in SYSTEM_META:
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
            else:
                meta.pop(key, None)
        if self.status_subresource:
            out.pop("status", None)
            if "status" in current:
                out["status"] = copy.deepcopy(current["status"])
        out = self._checked(out, version, fv)
        if _content(out) != _content(current):
            out["metadata"]["generation"] = int(current["metadata"].get("generation", 1)) + 1
        return out

    def delete_answer(self, obj: Json, *, removed: bool) -> Json | None:
        return None if removed else obj  # kept for its finalizers: the object

    def _version_of(self, obj: Json) -> str:
        version = str(obj.get("apiVersion", "")).rpartition("/")[2]
        return version if version in self.versions else self.storage

    def _checked(self, obj: Json, version: str, fv: FieldValidation) -> Json:
        pruned, dropped = structural.prune(self.schema(version), obj)
        fv.unknown(dropped)
        causes = structural.validate(self.schema(version), pruned)
        if causes:
            err = errors.invalid(f"{self.kind}.{self.group}", obj["metadata"]["name"], causes)
            err.details.update(kind=self.kind, group=self.group)
            raise err
        out: Json = pruned
        return out

    # ---- scale ----------------------------------------------------------------------------

    def get_scale(self, obj: Json) -> Json:
        """The object's autoscaling/v1 Scale (an error when specReplicasPath is absent)."""
        scale = self._scale()
        replicas = _get(obj, scale["specReplicasPath"])
        if replicas is None:
            raise errors.KubeError(
                500,
                "InternalError",
                f'Internal error occurred: the spec replicas field "{scale["specReplicasPath"]}" '
                "does not exist",
            )
        status: Json = {"replicas": int(_get(obj, scale.get("statusReplicasPath", "")) or 0)}
        if (selector := _get(obj, scale.get("labelSelectorPath", ""))) is not None:
            status["selector"] = selector
        meta = obj["metadata"]
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": int(replicas)},
            "status": status,
        }

    def with_replicas(self, obj: Json, scale: Json) -> Json:
        """The object once a Scale (a PUT or a patched one) is written to it."""
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid(
                "Scale.autoscaling",
                obj["metadata"]["name"],
                [
                    errors.Cause(
                        "spec.replicas",
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                    )
                ],
            )
        out = copy.deepcopy(obj)
        _set(out, self._scale()["specReplicasPath"], replicas)
        return out

    def _scale(self) -> Json:
        if self.scale is None:
            raise errors.not_found(f"{self.key}/scale", "")
        return self.scale


def _content(obj: Json) -> Json:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _get(obj: Json, path: str) -> Any:
    if not path:
        return None
    cur: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _set(obj: Json, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value
