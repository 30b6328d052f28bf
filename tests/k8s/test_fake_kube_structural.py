"""The fake API server's structural schemas, checked without a server: pruning, causes
worded as the real server words them, and what the fake cannot check (refused)."""

from __future__ import annotations

from typing import Any

from tests.k8s.fake_kube import structural


def test_structural_schemas_prune_unknown_fields_but_never_metadata() -> None:
    schema = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}},
                    "list": {"type": "array", "items": {"type": "object", "properties": {}}},
                },
            },
        },
    }
    obj: dict[str, Any] = {
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {"k": "v"}},
        "spec": {"a": 1, "b": 2, "free": {"any": 1}, "map": {"k": "v"}, "list": [{"c": 1}]},
        "status": {"x": 1},
    }  # fmt: skip
    pruned, dropped = structural.prune(schema, obj)
    assert dropped == ["spec.b", "spec.list[0].c", "status"]
    assert pruned["metadata"] == obj["metadata"]
    assert pruned["spec"] == {"a": 1, "free": {"any": 1}, "map": {"k": "v"}, "list": [{}]}
    assert obj["spec"]["b"] == 2  # the input is not changed


def test_structural_validation_words_causes_as_the_server() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["n"],
                "properties": {
                    "n": {"type": "integer", "minimum": 1, "maximum": 3},
                    "r": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                    "s": {"type": "string", "maxLength": 2, "enum": ["a", "bb"]},
                    "l": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
                    "o": {"type": "integer", "nullable": True},
                    "i": {"x-kubernetes-int-or-string": True},
                },
            }
        },
    }
    causes = structural.validate(
        schema, {"spec": {"n": 4.0, "r": 0, "s": "c", "l": ["x", 1], "o": None, "i": "50%"}}
    )
    assert [(c.field, c.message) for c in causes] == [
        ("spec.n", "Invalid value: 4.0: spec.n in body should be less than or equal to 3"),
        ("spec.r", "Invalid value: 0: spec.r in body should be greater than 0"),
        ("spec.s", 'Unsupported value: "c": supported values: "a", "bb"'),
        ("spec.l", "Too many: 2: must have at most 1 items"),
        (
            "spec.l[1]",
            'Invalid value: "integer": spec.l[1] in body must be of type string: "integer"',
        ),
    ]
    assert [c.field for c in structural.validate(schema, {"spec": {}})] == ["spec.n"]


def test_structural_lists_what_the_fake_cannot_check() -> None:
    assert structural.unsupported({"type": "object", "properties": {"a": {"type": "string"}}}) == []
    found = structural.unsupported(
        {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}, "b": {}}}
    )
    assert found == ["a: oneOf", "a: no type (not a structural schema)",
                     "b: no type (not a structural schema)"]  # fmt: skip
