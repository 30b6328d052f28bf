"""Proxies an admin adds to a provider at run time: each line read by the provider's type
(`ProviderType.parse_entry`), stored in `ProviderEntries`; the provider's own service
(its syncer) turns them into proxies and drains the ones removed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxyfleet.api.providers.entry_secrets import safe_message
from proxyfleet.api.providers.service import ProviderCatalog
from proxyfleet.common.core.errors import Conflict, InvalidInput, NotFound
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.providers import ParsedEntry, ProviderConfig, provider_types
from proxyfleet.common.store import AddedEntry, ProviderEntries

log = get_logger(__name__)

UNREADABLE = "***"
"""What a listing shows for a stored line its type no longer reads (nothing of it)."""

Parser = Callable[[Any, str], ParsedEntry]


@dataclass(frozen=True, slots=True)
class ShownEntry:
    """An entry as answers show it: no password."""

    id: str
    masked: str
    entry: AddedEntry


@dataclass(frozen=True, slots=True)
class Added:
    shown: ShownEntry
    created: bool
    """False: the same entry was there already (nothing changed)."""


class ProviderEntryService:
    def __init__(self, catalog: ProviderCatalog, entries: ProviderEntries) -> None:
        self._catalog = catalog
        self._entries = entries

    def _provider(self, name: str) -> tuple[ProviderConfig, Parser]:
        """The provider and its type's parser: NotFound for an unknown provider, Conflict
        for one whose type takes no entries at run time."""
        provider = next((p for p in self._catalog.config.providers if p.name == name), None)
        if provider is None:
            known = ", ".join(sorted(p.name for p in self._catalog.config.providers))
            raise NotFound(
                f"unknown provider {name!r}; configured: {known}", code="unknown_provider"
            )
        kind = provider_types().get(provider.type)
        if kind is None or kind.parse_entry is None:
            raise Conflict(
                f"provider {name!r} (type {provider.type!r}) takes no proxies added at run "
                "time; create proxies with POST /v1/proxies",
                code="provider_takes_no_entries",
            )
        return provider, kind.parse_entry

    async def add(
        self,
        name: str,
        line: str,
        *,
        field: str,
        zone: str | None,
        labels: dict[str, str],
        entry_name: str,
        caller: str,
    ) -> Added:
        """Store one entry. The same entry again (same line, zone, labels and name) is no
        change; another one with the id of a stored one (same scheme, host, port and user)
        is a Conflict: remove that one first."""
        provider, parse = self._provider(name)
        if zone is not None:
            self._catalog.zone_for(provider, zone)  # a 400 naming the provider's zones
        try:
            parsed = _read(parse, provider, line)
        except InvalidInput as exc:
            raise InvalidInput(
                f"field {field}: {safe_message(str(exc), line)}", code="invalid_entry"
            ) from None
        entry = AddedEntry(line=line, zone=zone or "", labels=labels, name=entry_name)
        shown = ShownEntry(parsed.id, parsed.masked, entry)
        if await self._entries.add(provider.name, parsed.id, entry):
            log.info("api.provider_entry_added", provider=name, entry_id=parsed.id, by=caller)
            return Added(shown, created=True)
        stored = (await self._entries.entries(provider.name)).get(parsed.id)
        if stored == entry:
            return Added(shown, created=False)
        raise Conflict(
            f"provider {name!r} has an entry {parsed.id} already (the same scheme, host, "
            "port and user) with another password, zone, labels or name; remove it first",
            code="entry_exists",
        )

    async def remove(self, name: str, entry_id: str, *, caller: str) -> None:
        """Drop one entry (its proxy is then drained and forgotten); NotFound if none."""
        provider, _ = self._provider(name)
        if not await self._entries.remove(provider.name, entry_id):
            raise NotFound(
                f"provider {name!r} has no entry {entry_id} added through the API",
                code="entry_not_found",
            )
        log.info("api.provider_entry_removed", provider=name, entry_id=entry_id, by=caller)

    async def list(self, name: str) -> list[ShownEntry]:
        """The entries added through the API, by id, masked by the type's parser."""
        provider, parse = self._provider(name)
        stored = await self._entries.entries(provider.name)
        return [
            ShownEntry(entry_id, _masked(provider, parse, entry), entry)
            for entry_id, entry in sorted(stored.items())
        ]


def _read(parse: Parser, provider: ProviderConfig, line: str) -> ParsedEntry:
    """The type's reading of `line`. Its InvalidInput passes; anything else is its bug,
    raised again without the original, whose message or traceback may hold the line."""
    try:
        return parse(provider, line)
    except InvalidInput:
        raise
    except Exception as exc:
        raise RuntimeError(
            f"provider type {provider.type!r}: parse_entry raised {type(exc).__name__}"
        ) from None


def _masked(provider: ProviderConfig, parse: Parser, entry: AddedEntry) -> str:
    try:
        return _read(parse, provider, entry.line).masked
    except InvalidInput:
        # stored by an earlier version that read it: show nothing of it rather than guess
        return UNREADABLE
