"""JSON merge patch (RFC 7396): the examples of its appendix A, and a patch nested too deep."""

from __future__ import annotations

import copy

import pytest

from proxyfleet.api.pools.patch import MAX_DEPTH, merge_patch
from proxyfleet.common.core.errors import InvalidInput

RFC_7396_EXAMPLES: list[tuple[object, object, object]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC_7396_EXAMPLES)
def test_the_rfc_examples(target: object, patch: object, expected: object) -> None:
    kept = copy.deepcopy(target), copy.deepcopy(patch)
    assert merge_patch(target, patch) == expected
    assert (target, patch) == kept  # neither argument changed


def test_a_pool_spec_patch() -> None:
    spec = {"provider": "local", "size": 4, "autoscale": {"min": 1, "max": 8}, "zones": ["a"]}
    patched = merge_patch(spec, {"size": None, "autoscale": {"max": 40}, "zones": ["b", "c"]})
    assert patched == {"provider": "local", "autoscale": {"min": 1, "max": 40}, "zones": ["b", "c"]}


def test_a_patch_nested_too_deep_is_invalid_input() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(MAX_DEPTH + 1):
        node["x"] = node = {}
    with pytest.raises(InvalidInput, match="deeper than"):
        merge_patch({}, deep)
