"""Strategic merge patch, for the fields of core/v1 objects that have a patch strategy.
Pure: no I/O.

Maps merge as in a JSON merge patch. Lists of objects with a merge key merge element by
element (containers by name, volumeMounts by mountPath, ownerReferences by uid...);
`finalizers` merges as a set; every other list is replaced. Directives: `$patch: delete`
on a list element removes it, `$patch: replace` on a map replaces it,
`$deleteFromPrimitiveList/<field>` removes values from a set-like list;
`$setElementOrder/<field>` and `$retainKeys` are accepted and ignored.
"""

from __future__ import annotations

import copy
from typing import Any

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "conditions": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
}
SET_LISTS = {"finalizers"}
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
IGNORED = ("$setElementOrder/", "$retainKeys")


def strategic_merge(target: Any, patch: Any) -> Any:
    """`target` (not changed) with `patch` applied."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result: dict[str, Any] = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith(IGNORED) or key == "$patch":
            continue
        if key.startswith(DELETE_PRIMITIVE):
            field = key[len(DELETE_PRIMITIVE) :]
            drop = set(value or [])
            left = [v for v in result.get(field) or [] if v not in drop]
            if left:
                result[field] = left
            else:
                result.pop(field, None)
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _merge_list(key: str, current: Any, patch: list[Any]) -> list[Any]:
    have = list(current) if isinstance(current, list) else []
    if key in SET_LISTS:
        return have + [v for v in patch if v not in have]
    merge_key = _merge_key(key, patch + have)
    if merge_key is None:
        return copy.deepcopy(patch)
    out = copy.deepcopy(have)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            out.append(copy.deepcopy(item))
            continue
        index = next(
            (
                i
                for i, o in enumerate(out)
                if isinstance(o, dict) and o.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
        elif index is None:
            out.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            out[index] = strategic_merge(out[index], item)
    return out


def _find(items: list[Any], merge_key: str, value: Any) -> int | None:
    for i, o in enumerate(items):
        if isinstance(o, dict) and o.get(merge_key) == value:
            return i
    return None


def _merge_key(key: str, items: list[Any]) -> str | None:
    if key == "ports":  # container ports by number, service ports by port
        dicts = [i for i in items if isinstance(i, dict)]
        if dicts and all("containerPort" in i for i in dicts):
            return "containerPort"
        return "port" if dicts else None
    return MERGE_KEYS.get(key)
