"""Import-linter contracts whose module names may hold a pattern inside a name
(`proxyfleet.provisioner_*`): import-linter's own wildcards replace only a whole name.

Each pattern is expanded to the packages installed under its parent before import-linter
reads the contract, so a new provider package (`proxyfleet.provisioner_aws`) is covered
by every contract that names `proxyfleet.provisioner_*`, with no edit. Registered in the
root pyproject.toml (`contract_types`); lint-imports imports it from the repository root.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from fnmatch import fnmatchcase
from typing import Any

from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract

_EXPANDED = ("source_modules", "forbidden_modules", "modules", "layers")
"""The options that name modules (a layer names several, split by | or :)."""
_LAYER_SPLIT = re.compile(r"(\s*[|:]\s*)")
_PATTERN = re.compile(r"[*?[]")


def installed(pattern: str) -> list[str]:
    """The modules `pattern` names: itself when its last name is no shell pattern, or a
    wildcard import-linter reads itself (`a.*`, `a.**`, `a.*.b`), else the matching modules
    under its parent package."""
    parent, _, last = pattern.rpartition(".")
    if not _PATTERN.search(last) or last in ("*", "**") or "*" in parent:
        return [pattern]
    package = importlib.import_module(parent)
    names = sorted(f"{parent}.{m.name}" for m in pkgutil.iter_modules(package.__path__))
    found = [name for name in names if fnmatchcase(name, pattern)]
    if not found:
        raise ValueError(f"the pattern {pattern!r} names no installed module")
    return found


def _expand_layer(layer: str) -> str:
    """A pattern's modules join the layer as its others do (independent `|`, or `:`)."""
    sep = " : " if ":" in layer else " | "
    parts = _LAYER_SPLIT.split(layer)
    return "".join(sep.join(installed(p)) if i % 2 == 0 else p for i, p in enumerate(parts))


def expand_options(options: dict[str, Any]) -> dict[str, Any]:
    """The contract's options with each pattern replaced by the modules it names."""
    out = dict(options)
    for key in _EXPANDED:
        if key == "layers" and key in out:
            out[key] = [_expand_layer(layer) for layer in out[key]]
        elif key in out:
            out[key] = [name for pattern in out[key] for name in installed(pattern)]
    return out


class ForbiddenByPattern(ForbiddenContract):
    """`forbidden`, with patterns inside names."""

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        super().__init__(name, session_options, expand_options(contract_options))


class IndependenceByPattern(IndependenceContract):
    """`independence`, with patterns inside names."""

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        super().__init__(name, session_options, expand_options(contract_options))


class LayersByPattern(LayersContract):
    """`layers`, with patterns inside names."""

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        super().__init__(name, session_options, expand_options(contract_options))
