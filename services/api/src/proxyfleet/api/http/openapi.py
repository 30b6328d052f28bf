"""The OpenAPI document says what the API enforces: msgspec's own schema for each Struct's
fields, and `additionalProperties: false` where unknown fields are refused.

Litestar builds Struct schemas from its own reading of the field types, which drops a
bound of 0 (`gt=0` on a TTL), key patterns and lengths of maps and the bounds of their
values, and never says that a Struct forbids unknown fields; msgspec's JSON Schema is the
one its decoder (and so the API) applies.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import msgspec
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, Schema, SecurityScheme
from litestar.plugins import OpenAPISchemaPlugin

from proxyfleet.api.http.docs_ui import render_plugins

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.typing import FieldDefinition

OPENAPI = OpenAPIConfig(
    title="Proxyfleet API",
    version="1",
    description="Leases on a fleet of authenticated egress proxies, and the fleet itself.",
    components=Components(
        security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}
    ),
    render_plugins=render_plugins(),
    use_handler_docstrings=True,  # every operation's description is its handler's docstring
)

_SUBSCHEMA = {"items", "additional_properties", "property_names", "not_"}
_SUBSCHEMA_LISTS = {"any_of", "one_of", "all_of", "prefix_items"}


class MsgspecStructSchemas(OpenAPISchemaPlugin):
    """Litestar's component for a Struct (name, title, required, references to other
    components), with its properties as msgspec describes them. A property that refers
    to another component (an enum, a nested Struct) keeps Litestar's, so the reference
    names a component Litestar registered."""

    def __init__(self) -> None:
        # Litestar's own plugin is private API (2.x): tests/api/test_api_openapi_contract.py
        # notices when an upgrade changes what it builds.
        self._litestar = StructSchemaPlugin()

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return self._litestar.is_plugin_supported_field(field_definition)

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = self._litestar.to_openapi_schema(field_definition, schema_creator)
        own = struct_json_schema(field_definition.type_)
        for name, prop in own.get("properties", {}).items():
            if schema.properties is not None and not _refers(prop):
                schema.properties[name] = spec_schema(prop)
        if own.get("additionalProperties") is False:
            schema.additional_properties = False
        return schema


def struct_json_schema(struct: type[Any]) -> dict[str, Any]:
    """msgspec's JSON Schema of one Struct, its own definition (not the reference)."""
    doc = msgspec.json.schema(struct)
    name = doc["$ref"].rsplit("/", 1)[1]
    own: dict[str, Any] = doc["$defs"][name]
    return own


def spec_schema(node: dict[str, Any]) -> Schema:
    """A JSON Schema object (without references) as Litestar's spec `Schema`."""
    aliases = Schema.field_aliases()
    fields: dict[str, Any] = {}
    for key, value in node.items():
        name = aliases.get(key) or re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()
        fields[name] = _spec_value(name, value)
    return Schema(**fields)


def _spec_value(name: str, value: Any) -> Any:
    if name == "properties":
        return {k: spec_schema(v) for k, v in value.items()}
    if name in _SUBSCHEMA and isinstance(value, dict):
        return spec_schema(value)
    if name in _SUBSCHEMA_LISTS:
        return [spec_schema(v) for v in value]
    return value


def _refers(node: object) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_refers(v) for v in node.values())
    if isinstance(node, list):
        return any(_refers(v) for v in node)
    return False
