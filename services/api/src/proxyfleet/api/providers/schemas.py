"""Response bodies of /v1/providers."""

from __future__ import annotations

import msgspec


class ProviderOut(msgspec.Struct, kw_only=True):
    name: str
    type: str
    zones: list[str]
    counts: dict[str, int]
    """Proxies of this provider by phase."""


class ProviderList(msgspec.Struct, kw_only=True):
    items: list[ProviderOut]
