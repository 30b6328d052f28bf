"""What defines a provider type: its config struct, placement validator and checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import msgspec

from proxyfleet.common.providers.config import ProviderConfig, type_name
from proxyfleet.common.providers.placement import NO_PLACEMENT, PlacementValidator

C = TypeVar("C", bound=ProviderConfig)


def _no_check(config: ProviderConfig, where: str) -> None:
    """For types whose struct says everything."""


@dataclass(frozen=True, slots=True)
class ParsedEntry:
    """A proxy line an admin adds at run time, as its type read it."""

    id: str
    """The id of the proxy it becomes (stable: the same line always gives the same id)."""
    masked: str
    """Its URL with the password masked: what listings show."""


@dataclass(frozen=True, slots=True)
class ProviderType(Generic[C]):
    """A provider type, as its provisioner package registers it (entry point group
    `proxyfleet.providers`, named `name`)."""

    name: str
    """The tag: `type:` in the providers file, and the name of the type's section."""
    config: type[C]
    """The entry's struct: a ProviderConfig subclass tagged `name`, with a field `name`."""
    placement: PlacementValidator = NO_PLACEMENT
    """What the API asks before storing a proxy of this type."""
    check: Callable[[C, str], None] = _no_check
    """ConfigError naming `where` (`<file>: key providers[i]`) plus the key, for what the
    struct alone does not say."""
    parse_entry: Callable[[C, str], ParsedEntry] | None = None
    """For a type whose proxies an admin may add at run time (`POST
    /v1/providers/{name}/proxies`): reads one line as its source files do; InvalidInput
    (naming what is wrong, never the password) for a bad one. None: the type takes none."""

    def __post_init__(self) -> None:
        if type_name(self.config) != self.name:
            raise ValueError(f"{self.config.__name__} is tagged {type_name(self.config)!r}")
        if self.name not in {f.name for f in msgspec.structs.fields(self.config)}:
            raise ValueError(f"{self.config.__name__} has no section field {self.name!r}")
