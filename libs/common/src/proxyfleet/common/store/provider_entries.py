"""Proxies an admin added to a provider at run time (`POST /v1/providers/{name}/proxies`):
`<ns>:entries:<provider>` maps an entry's id to the entry as given (credentials included:
protected like every proxy's own credentials in the registry, docs/static-provider.md),
and `<ns>:entries_ver:<provider>` counts changes, so a reader polls one key to know when to
read them again.
"""

from __future__ import annotations

from typing import cast

import msgspec
import redis.asyncio as aioredis

from proxyfleet.common.store.outage import translates_outages


class AddedEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One entry as stored: its line (a proxy URL or another format its source files take)
    and where the proxy goes."""

    line: str
    zone: str = ""
    """"" : the provider's default zone."""
    labels: dict[str, str] = {}
    name: str = ""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(AddedEntry).decode


@translates_outages
class ProviderEntries:
    def __init__(self, client: aioredis.Redis, *, namespace: str = "pf") -> None:
        self._redis = client
        self._ns = namespace

    def _keys(self, provider: str) -> tuple[str, str]:
        return f"{self._ns}:entries:{provider}", f"{self._ns}:entries_ver:{provider}"

    async def add(self, provider: str, entry_id: str, entry: AddedEntry) -> bool:
        """Store one entry; False when an entry with this id was there already (kept)."""
        entries, version = self._keys(provider)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(entries, entry_id, _encode(entry).decode())
            pipe.incr(version)
            added, _ = await pipe.execute()
        return bool(added)

    async def remove(self, provider: str, entry_id: str) -> bool:
        """Drop one entry; False when there was none with this id."""
        entries, version = self._keys(provider)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hdel(entries, entry_id)
            pipe.incr(version)
            removed, _ = await pipe.execute()
        return bool(removed)

    async def entries(self, provider: str) -> dict[str, AddedEntry]:
        """Every entry of `provider`: id -> entry."""
        key, _ = self._keys(provider)
        raw = cast(dict[str, str], await self._redis.hgetall(key))
        return {entry_id: _decode(value) for entry_id, value in raw.items()}

    async def version(self, provider: str) -> int:
        """Changes so far (0: never changed); read it to know whether to read lines()."""
        _, version = self._keys(provider)
        return int(await self._redis.get(version) or 0)
