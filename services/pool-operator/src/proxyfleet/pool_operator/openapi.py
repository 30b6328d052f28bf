"""msgspec's JSON Schema of a Struct as a Kubernetes structural schema (OpenAPI v3, as a
CustomResourceDefinition's `openAPIV3Schema` takes it). Pure: no I/O but reading the
Structs' own source for their field docstrings.

What changes on the way: references are inlined (the models are not recursive); an
optional field (`anyOf: [X, null]`) becomes X with `nullable: true`; JSON Schema 2020's
numeric `exclusiveMinimum` becomes OpenAPI 3.0's `minimum` with `exclusiveMinimum: true`;
`additionalProperties: false` goes (a structural schema prunes unknown fields instead, and
forbids it beside `properties`); titles go; a default is not set by the API server (the
code's defaults apply, in one place) but said in the description. Anything else the
converter does not know is refused, so a new kind of field cannot slip through unchecked.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec

Schema = dict[str, Any]

_KEPT = ("type", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems",
         "maxItems", "enum", "format")  # fmt: skip
_DROPPED = ("title", "additionalProperties", "properties", "required", "items", "default",
            "description", "$ref", "anyOf", "exclusiveMinimum", "exclusiveMaximum")  # fmt: skip


class Unsupported(ValueError):
    """A schema construct this converter does not translate."""


def structural(model: type[msgspec.Struct], *, defaults: bool = True) -> Schema:
    """The structural schema of `model`, described by its docstrings (and, with
    `defaults`, each field's default)."""
    schema = msgspec.json.schema(model)
    definitions: dict[str, Schema] = schema.pop("$defs", {})
    structs = {s.__name__: s for s in _structs(msgspec.inspect.type_info(model))}
    return _convert(schema, _Converter(definitions, structs, defaults), model.__name__)


def _structs(info: msgspec.inspect.Type) -> list[type[msgspec.Struct]]:
    """Every Struct class a type refers to, itself included (msgspec titles each object
    of a schema by its class name: how a property finds its docstring)."""
    if isinstance(info, msgspec.inspect.StructType):
        found = [info.cls]
        for f in info.fields:
            found += _structs(f.type)
        return found
    inner: list[msgspec.inspect.Type] = []
    if isinstance(info, msgspec.inspect.UnionType):
        inner = list(info.types)
    elif isinstance(info, msgspec.inspect.ListType | msgspec.inspect.SetType):
        inner = [info.item_type]
    elif isinstance(info, msgspec.inspect.DictType):
        inner = [info.key_type, info.value_type]
    return [s for t in inner for s in _structs(t)]


@dataclass(frozen=True, slots=True)
class _Converter:
    defs: dict[str, Schema]
    """msgspec's `$defs`: each Struct's object schema by class name."""
    structs: dict[str, type[msgspec.Struct]]
    """The Struct classes by name, for their field docstrings."""
    defaults: bool


def _convert(node: Schema, conv: _Converter, where: str, doc: str = "") -> Schema:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        target = conv.defs[name]
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _convert({**target, **extra}, conv, where, doc or target.get("description", ""))
    if "anyOf" in node:
        variants = [v for v in node["anyOf"] if v != {"type": "null"}]
        if len(variants) != 1 or len(node["anyOf"]) != 2:
            raise Unsupported(f"{where}: anyOf other than X-or-null")
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        return {**_convert({**variants[0], **rest}, conv, where, doc), "nullable": True}
    unknown = set(node) - set(_KEPT) - set(_DROPPED)
    if unknown:
        raise Unsupported(f"{where}: {', '.join(sorted(unknown))}")
    out: Schema = {}
    text = doc or node.get("description", "")
    if conv.defaults and "default" in node and node["default"] not in (None, [], {}):
        default = msgspec.json.encode(node["default"]).decode()
        text = f"{text} Default: {default}." if text else f"Default: {default}."
    if text:
        out["description"] = text
    out.update({k: node[k] for k in _KEPT if k in node})
    if "enum" in node and "type" not in node:  # a Literal: msgspec gives values alone
        out["type"] = _enum_type(node["enum"], where)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in node:
            out[limit] = node[bound]
            out[bound] = True
    if node.get("type") == "object":
        _object(node, out, conv, where)
    elif node.get("type") == "array":
        out["items"] = _convert(node["items"], conv, f"{where}[]")
    return out


def _enum_type(values: list[Any], where: str) -> str:
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return "string"
    if kinds == {int}:
        return "integer"
    raise Unsupported(f"{where}: an enum of {', '.join(sorted(k.__name__ for k in kinds))}")


def _object(node: Schema, out: Schema, conv: _Converter, where: str) -> None:
    properties: dict[str, Schema] = node.get("properties", {})
    extra = node.get("additionalProperties")
    if properties and isinstance(extra, dict):
        raise Unsupported(f"{where}: properties beside additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = _convert(extra, conv, f"{where}.*")
        return
    model = conv.structs.get(node.get("title", ""))
    docs = _docs_by_encoded_name(model) if model is not None else {}
    out["properties"] = {
        name: _convert(sub, conv, f"{where}.{name}", docs.get(name, ""))
        for name, sub in properties.items()
    }
    if node.get("required"):
        out["required"] = list(node["required"])


def _docs_by_encoded_name(model: type[msgspec.Struct]) -> dict[str, str]:
    """Field docstrings by the name the schema uses (a renamed field's encoded name)."""
    docs = field_docs(model)
    info = msgspec.inspect.type_info(model)
    assert isinstance(info, msgspec.inspect.StructType)
    return {f.encode_name: docs[f.name] for f in info.fields if f.name in docs}


@cache
def field_docs(model: type[msgspec.Struct]) -> dict[str, str]:
    """Each field's docstring (the string right below it), one paragraph."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(model)))
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef)
    docs: dict[str, str] = {}
    for stmt, after in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs
