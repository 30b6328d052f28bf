"""The part of a provider entry every type shares: the base of each type's config struct.

Each provider type subclasses `ProviderConfig` with `tag="<type>"` and one required field
named as the type (its section: `<type>:` under `type: <type>`); parsing converts the entries
to the union of the installed subclasses (`config_file`). Pure: no I/O.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from proxyfleet.common.domain.egress import EgressSettings

Name = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,30}$")]
Zone = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]


class ProviderConfig(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, kw_only=True):
    """One entry of `providers:`; `type` selects the subclass."""

    name: Name
    """Instance name; intents for it go to proxyfleet.intents.<name>.*"""
    zones: list[Zone]
    """Zones this instance serves; a proxy's zone must be one of them."""
    boot_timeout: Seconds = 120.0
    """A proxy not ready this long after provisioning fails."""
    max_proxies: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Most proxies this instance may have (failed and deleted ones do not count); a
    create past it is refused (409). None: no limit."""
    egress: EgressSettings = msgspec.field(default_factory=EgressSettings)
    """Exclusivity by exit address and whether a proxy needs a known one to be ready
    (docs/egress.md)."""

    @property
    def type(self) -> str:
        """The provider type: the tag of this entry's class."""
        return type_name(type(self))


def type_name(config: type[ProviderConfig]) -> str:
    """The tag (`type:` value) of a ProviderConfig subclass."""
    return str(config.__struct_config__.tag)
