"""Response bodies of /v1/providers."""

from __future__ import annotations

import msgspec


class ProviderOut(msgspec.Struct, kw_only=True):
    name: str
    type: str
    zones: list[str]
    counts: dict[str, int]
    """Proxies of this provider by phase."""
    max_proxies: int | None = None
    """Most proxies it may have (failed and deleted ones do not count); null: no limit."""


class ProviderList(msgspec.Struct, kw_only=True):
    items: list[ProviderOut]
