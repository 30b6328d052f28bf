"""What the store needs to know of each resource it holds: its kind and group, whether it is
namespaced, how a new object is filled in and an update merged and checked, what a delete
answers. The core/v1 kinds here; custom resources (custom.py) and the
CustomResourceDefinitions themselves (crds.py) are registered as their CRDs come and go.
Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import errors, objects, validation
from .objects import KINDS, RETURNS_OBJECT_ON_DELETE, Json

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


@dataclass
class FieldValidation:
    """A write's `fieldValidation`: what an unknown field does (Warn by default, as the
    API server since 1.27: dropped, with a Warning header), and the warnings it made."""

    mode: str = "Warn"
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, value: str | None) -> FieldValidation:
        mode = value or "Warn"
        if mode not in FIELD_VALIDATION:
            raise errors.bad_request(
                f'fieldValidation: Unsupported value: "{mode}": supported values: '
                '"Ignore", "Strict", "Warn"'
            )
        return cls(mode)

    def unknown(self, paths: list[str]) -> None:
        """Fields the schema does not declare were dropped: refuse them (Strict) or say so."""
        if not paths:
            return
        if self.mode == "Strict":
            text = ", ".join(f'unknown field "{p}"' for p in paths)
            raise errors.bad_request(f"strict decoding error: {text}")
        if self.mode == "Warn":
            self.warnings += [f'unknown field "{p}"' for p in paths]


class Kind:
    """A resource as the store holds it (`key`: its plural, and `.group` beyond core)."""

    key: str
    plural: str
    kind: str
    group: str = ""
    namespaced: bool = True
    status_subresource: bool = False

    def api_version(self, version: str = "") -> str:
        return "v1"

    def prepare(
        self, namespace: str, body: Json, *, name: str, uid: str, now: float, fv: FieldValidation
    ) -> Json:
        """The object a create stores (raises the 422 of an invalid body)."""
        raise NotImplementedError

    def merge(self, current: Json, body: Json, subresource: str, fv: FieldValidation) -> Json:
        """The object an update (a PUT, or a patched body) stores."""
        raise NotImplementedError

    def check_update(self, name: str, current: Json, new: Json, subresource: str) -> None:
        """Refuse what may not change (raises)."""

    def delete_answer(self, obj: Json, *, removed: bool) -> Json | None:
        """What a DELETE answers: the object, or None for a Status."""
        return None


class CoreKind(Kind):
    def __init__(self, plural: str) -> None:
        self.key = self.plural = plural
        self.kind = KINDS[plural]
        self.status_subresource = plural in objects.HAS_STATUS

    def prepare(
        self, namespace: str, body: Json, *, name: str, uid: str, now: float, fv: FieldValidation
    ) -> Json:
        meta = body.get("metadata") or {}
        validation.validate(self.kind, {**body, "metadata": {**meta, "name": name}})
        return objects.prepare_new(self.plural, namespace, body, name=name, uid=uid, now=now)

    def merge(self, current: Json, body: Json, subresource: str, fv: FieldValidation) -> Json:
        new = objects.merge_for_update(self.plural, current, body, subresource)
        validation.validate(self.kind, new)
        return new

    def check_update(self, name: str, current: Json, new: Json, subresource: str) -> None:
        if self.plural == "pods" and not subresource:
            validation.validate_pod_update(name, current, new)

    def delete_answer(self, obj: Json, *, removed: bool) -> Json | None:
        return obj if self.plural in RETURNS_OBJECT_ON_DELETE else None


def core_kinds() -> dict[str, Kind]:
    return {plural: CoreKind(plural) for plural in KINDS}
