"""JSON Schema of the msgspec wire models, in the form FastStream's AsyncAPI generator takes.

FastStream builds payload schemas with pydantic, which knows nothing of msgspec Structs. A
body is therefore annotated `Annotated[bytes, WithJsonSchema(...)]` (or `dict` for a
publisher's schema): the bytes go to msgspec untouched, and the document shows the schema
msgspec derives from the Struct. Pure.
"""

from __future__ import annotations

from typing import Any

import msgspec

JsonSchema = dict[str, Any]


def json_schema(model: Any) -> JsonSchema:
    """msgspec's schema of `model` with every `$defs` reference inlined: pydantic refuses
    references it did not make (our models are not recursive, so inlining ends)."""
    schema = msgspec.json.schema(model)
    definitions: dict[str, Any] = schema.pop("$defs", {})
    inlined: JsonSchema = _inline(schema, definitions)
    return inlined


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(definitions[node["$ref"].rsplit("/", 1)[1]], definitions)
        return {key: _inline(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value, definitions) for value in node]
    return node
