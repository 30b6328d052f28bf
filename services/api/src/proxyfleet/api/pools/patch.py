"""JSON merge patch (RFC 7396) of decoded JSON. Pure: no I/O."""

from __future__ import annotations

from proxyfleet.common.core.errors import InvalidInput

MAX_DEPTH = 16
"""Deepest object a patch may nest (a pool spec nests three): deeper is a 400, not a
recursion through a body the decoder let through."""


def merge_patch(target: object, patch: object, depth: int = 0) -> object:
    """`target` with `patch` applied: an object's members are merged (null removes one),
    anything else (an array, a string, a number) replaces the target whole. Neither
    argument is changed."""
    if not isinstance(patch, dict):
        return patch
    if depth >= MAX_DEPTH:
        raise InvalidInput(f"request body: a patch nests deeper than {MAX_DEPTH} objects")
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value, depth + 1)
    return merged
