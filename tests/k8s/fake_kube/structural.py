"""A custom resource checked against its CRD's structural schema (openAPIV3Schema), as the
API server does: unknown fields pruned (listed, for fieldValidation Warn or Strict), then
each value validated, every failure a cause of one 422 worded as the server words it.
Pure: no I/O.

Understood: type (object, array, string, integer, number, boolean), nullable, properties,
required, additionalProperties (a schema, or true), items, enum, minimum/maximum with
exclusiveMinimum/exclusiveMaximum (OpenAPI 3.0 booleans), minLength/maxLength, pattern,
minItems/maxItems, x-kubernetes-preserve-unknown-fields, x-kubernetes-int-or-string.
`unsupported` names anything else, and a CRD using it is refused by the fake rather than
served half-checked. Metadata is never pruned; only its name (and generateName) may be
constrained, as in a real CRD.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

from .errors import Cause

Schema = dict[str, Any]

KNOWN = {
    "type",
    "description",
    "nullable",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "format",
    "title",
    "default",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def unsupported(schema: Schema, path: str = "") -> list[str]:
    """Where `schema` uses what this module does not check (empty: all understood)."""
    found = [f"{path or '<root>'}: {key}" for key in sorted(set(schema) - KNOWN)]
    if schema.get("type") is None and not (
        schema.get("x-kubernetes-preserve-unknown-fields")
        or schema.get("x-kubernetes-int-or-string")
    ):
        found.append(f"{path or '<root>'}: no type (not a structural schema)")
    for name, sub in _children(schema):
        found += unsupported(sub, f"{path}.{name}" if path else name)
    return found


def _children(schema: Schema) -> Iterator[tuple[str, Schema]]:
    yield from (schema.get("properties") or {}).items()
    if isinstance(schema.get("additionalProperties"), dict):
        yield "*", schema["additionalProperties"]
    if isinstance(schema.get("items"), dict):
        yield "[]", schema["items"]


def prune(schema: Schema, obj: Any, path: str = "") -> tuple[Any, list[str]]:
    """`obj` without the fields the schema does not declare, and their paths."""
    dropped: list[str] = []
    return _prune(schema, copy.deepcopy(obj), path, dropped, top=not path), dropped


def _prune(schema: Schema, value: Any, path: str, dropped: list[str], top: bool = False) -> Any:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return value
    if isinstance(value, dict) and schema.get("type") == "object":
        props: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in list(value):
            where = f"{path}.{key}" if path else key
            if top and key in ("apiVersion", "kind", "metadata"):
                continue  # never pruned; metadata is checked apart
            if key in props:
                value[key] = _prune(props[key], value[key], where, dropped)
            elif isinstance(extra, dict):
                value[key] = _prune(extra, value[key], where, dropped)
            elif extra is not True:
                dropped.append(where)
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_prune(schema["items"], v, f"{path}[{i}]", dropped) for i, v in enumerate(value)]
    return value


def validate(schema: Schema, obj: Any) -> list[Cause]:
    """Every violation of `schema` by the (pruned) object, as the server's causes."""
    causes: list[Cause] = []
    _check(schema, obj, "", causes, top=True)
    return causes


def _check(schema: Schema, value: Any, path: str, out: list[Cause], top: bool = False) -> None:
    if value is None:
        if not schema.get("nullable"):
            kind = schema.get("type")
            if kind is not None:
                why = f'{path} in body must be of type {kind}: "null"'
                out.append(_invalid(path, '"null"', why))
        return
    kind = schema.get("type")
    if kind is not None and not _is_type(value, kind):
        got = _type_name(value)
        out.append(_invalid(path, f'"{got}"', f'{path} in body must be of type {kind}: "{got}"'))
        return
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                out.append(Cause(_join(path, name), "FieldValueRequired", "Required value"))
        for key, sub in value.items():
            where = _join(path, key)
            if top and key == "metadata":
                _check_metadata(props.get("metadata") or {}, sub, out)
            elif key in props and not (top and key in ("apiVersion", "kind")):
                _check(props[key], sub, where, out)
            elif isinstance(schema.get("additionalProperties"), dict):
                _check(schema["additionalProperties"], sub, where, out)
    elif isinstance(value, list):
        _check_list(schema, value, path, out)
    else:
        _check_scalar(schema, value, path, out)


def _check_metadata(schema: Schema, meta: Any, out: list[Cause]) -> None:
    props = schema.get("properties") or {}
    if isinstance(meta, dict):
        for key in ("name", "generateName"):
            if key in props and key in meta:
                _check(props[key], meta[key], f"metadata.{key}", out)


def _check_list(schema: Schema, value: list[Any], path: str, out: list[Cause]) -> None:
    if (most := schema.get("maxItems")) is not None and len(value) > most:
        out.append(
            Cause(
                path, "FieldValueTooMany", f"Too many: {len(value)}: must have at most {most} items"
            )
        )
    if (least := schema.get("minItems")) is not None and len(value) < least:
        out.append(
            _invalid(path, str(len(value)), f"{path} in body should have at least {least} items")
        )
    if isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _check(schema["items"], item, f"{path}[{i}]", out)


def _check_scalar(schema: Schema, value: Any, path: str, out: list[Cause]) -> None:
    shown = _shown(value)
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        out.append(
            Cause(
                path,
                "FieldValueNotSupported",
                f"Unsupported value: {shown}: supported values: {allowed}",
            )
        )
        return
    if isinstance(value, int | float) and not isinstance(value, bool):
        if (most := schema.get("maximum")) is not None:
            strict = bool(schema.get("exclusiveMaximum"))
            if value > most or (strict and value == most):
                rule = "less than" if strict else "less than or equal to"
                out.append(_invalid(path, shown, f"{path} in body should be {rule} {most}"))
        if (least := schema.get("minimum")) is not None:
            strict = bool(schema.get("exclusiveMinimum"))
            if value < least or (strict and value == least):
                rule = "greater than" if strict else "greater than or equal to"
                out.append(_invalid(path, shown, f"{path} in body should be {rule} {least}"))
    if isinstance(value, str):
        if (most := schema.get("maxLength")) is not None and len(value) > most:
            out.append(
                Cause(path, "FieldValueTooLong", f"Too long: may not be more than {most} bytes")
            )
        if (least := schema.get("minLength")) is not None and len(value) < least:
            out.append(
                _invalid(path, shown, f"{path} in body should be at least {least} chars long")
            )
        if (pattern := schema.get("pattern")) is not None and not re.search(pattern, value):
            out.append(_invalid(path, shown, f"{path} in body should match '{pattern}'"))


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number" if isinstance(value, float) else "integer"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _invalid(path: str, shown: str, why: str) -> Cause:
    return Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: {why}")
