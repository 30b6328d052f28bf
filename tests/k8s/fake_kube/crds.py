"""CustomResourceDefinitions (apiextensions.k8s.io/v1): checked as the API server checks them
(name = plural.group, one storage version, a structural schema: here also one the fake
can check in full), Established at once, and their resources served from then on
(`CrdController` registers each CRD's CustomKind with the store; deleting a CRD deletes its
resources, finalizers or not: a simplification). Namespaced resources only. Pure but for
the controller's hold on the store."""

from __future__ import annotations

import copy
import re

from . import errors, objects, structural
from .custom import SYSTEM_META, CustomKind
from .errors import Cause
from .events import Event
from .kinds import FieldValidation, Kind
from .objects import Json
from .store import Store

GROUP = "apiextensions.k8s.io"
KEY = f"customresourcedefinitions.{GROUP}"
SUBRESOURCES = {"status", "scale"}


class CrdKind(Kind):
    key, plural, kind, group = KEY, "customresourcedefinitions", "CustomResourceDefinition", GROUP
    namespaced = False
    status_subresource = True

    def api_version(self, version: str = "") -> str:
        return f"{GROUP}/v1"

    def prepare(
        self, namespace: str, body: Json, *, name: str, uid: str, now: float, fv: FieldValidation
    ) -> Json:
        obj = copy.deepcopy(body)
        obj["apiVersion"], obj["kind"] = self.api_version(), self.kind
        meta = obj.setdefault("metadata", {})
        meta.update(name=name, uid=uid, creationTimestamp=objects.rfc3339(now), generation=1)
        for system in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(system, None)
        _check(name, obj)
        stamp = objects.rfc3339(now)
        obj["status"] = {
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "reason": r,
                    "message": m,
                    "lastTransitionTime": stamp,
                }
                for t, r, m in (
                    ("NamesAccepted", "NoConflicts", "no conflicts found"),
                    ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                )
            ],
            "acceptedNames": copy.deepcopy(obj["spec"]["names"]),
            "storedVersions": [v["name"] for v in obj["spec"]["versions"] if v.get("storage")],
        }
        return obj

    def merge(self, current: Json, body: Json, subresource: str, fv: FieldValidation) -> Json:
        if subresource == "status":
            out = copy.deepcopy(current)
            out["status"] = copy.deepcopy(body.get("status") or {})
            return out
        out = copy.deepcopy(body)
        out["apiVersion"], out["kind"] = self.api_version(), self.kind
        meta = out.setdefault("metadata", {})
        for key in SYSTEM_META:
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
        out["status"] = copy.deepcopy(current.get("status") or {})
        _check(meta["name"], out)
        if out["spec"] != current["spec"]:
            meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        return out

    def delete_answer(self, obj: Json, *, removed: bool) -> Json | None:
        return obj


def _check(name: str, crd: Json) -> None:
    causes: list[Cause] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group", ""), names.get("plural", "")
    for field, value in (
        ("spec.group", group),
        ("spec.names.plural", plural),
        ("spec.names.kind", names.get("kind")),
    ):
        if not value:
            causes.append(Cause(field, "FieldValueRequired", "Required value"))
    if group and "." not in group:
        causes.append(_bad("spec.group", group, "should be a domain with at least one dot"))
    if name != f"{plural}.{group}":
        causes.append(_bad("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope", "Namespaced") != "Namespaced":
        causes.append(_bad("spec.scope", str(spec.get("scope")), "the fake serves Namespaced only"))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(Cause("spec.versions", "FieldValueRequired", "Required value"))
    if versions and sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(_bad("spec.versions", "", "must have exactly one version marked as storage"))
    for i, version in enumerate(versions):
        where = f"spec.versions[{i}]"
        if not re.fullmatch(r"v\d+((alpha|beta)\d+)?", str(version.get("name", ""))):
            causes.append(_bad(f"{where}.name", str(version.get("name")), "a Kubernetes version"))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            causes.append(
                Cause(
                    f"{where}.schema.openAPIV3Schema",
                    "FieldValueRequired",
                    "Required value: schemas are required",
                )
            )
            continue
        for problem in structural.unsupported(schema):
            causes.append(_bad(f"{where}.schema.openAPIV3Schema", problem, "not understood"))
        extra = set(version.get("subresources") or {}) - SUBRESOURCES
        if extra:
            causes.append(_bad(f"{where}.subresources", ", ".join(sorted(extra)), "unknown"))
    if causes:
        raise errors.invalid(f"CustomResourceDefinition.{GROUP}", name, causes)


def _bad(field: str, value: str, why: str) -> Cause:
    return Cause(field, "FieldValueInvalid", f'Invalid value: "{value}": {why}')


class CrdController:
    """Serves each CRD's resources as soon as it is stored (Established at once), stops
    serving them, and drops them, once it is deleted."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.kinds[KEY] = CrdKind()
        store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.resource != KEY:
            return
        kind = CustomKind(event.obj)
        if event.type == "DELETED":
            self.store.kinds.pop(kind.key, None)
            self.store.drop_all(kind.key)
        else:
            self.store.kinds[kind.key] = kind

    @staticmethod
    def served_by(store: Store) -> list[CustomKind]:
        """The custom resources `store` serves now."""
        with store.lock:
            return [k for k in store.kinds.values() if isinstance(k, CustomKind)]
