"""The installed provider types: each provisioner package names its `ProviderType` in the
entry point group `proxyfleet.providers`, found once per process; tests `register` more.

Pure: importlib.metadata reads package metadata; loading an entry point imports the
type's module, which imports no SDK (an import contract says so).
"""

from __future__ import annotations

import functools
from importlib.metadata import entry_points
from typing import Any

from proxyfleet.common.providers.placement import NO_PLACEMENT, PlacementValidator
from proxyfleet.common.providers.provider_type import ProviderType

ENTRY_POINT_GROUP = "proxyfleet.providers"

_registered: dict[str, ProviderType[Any]] = {}


@functools.cache
def _installed() -> dict[str, ProviderType[Any]]:
    found: dict[str, ProviderType[Any]] = {}
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        kind = point.load()
        if not isinstance(kind, ProviderType) or kind.name != point.name:
            raise TypeError(f"entry point {point.value}: expected a ProviderType {point.name!r}")
        found[kind.name] = kind
    return found


def provider_types() -> dict[str, ProviderType[Any]]:
    """Every type this process knows, by name: installed, then registered."""
    return {**_installed(), **_registered}


def register(kind: ProviderType[Any]) -> None:
    """Know `kind` in this process (replacing an installed type of its name)."""
    _registered[kind.name] = kind


def unregister(name: str) -> None:
    """Forget a type `register` added (an installed one stays)."""
    _registered.pop(name, None)


def validator_for(provider_type: str) -> PlacementValidator:
    """The placement validator of a provider type; an unknown type takes no placement."""
    kind = provider_types().get(provider_type)
    return kind.placement if kind is not None else NO_PLACEMENT
