"""The registry's identity: the installation marker (written once, when a writing service
starts on an empty store) and the tombstones of deleted proxies. GC refuses to delete
without the marker; re-adoption and GC tell a reset's survivors from true orphans by the
marker's `created_at` and the tombstones (docs/decisions/store.md, R5 and R6)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.store.outage import translates_outages
from proxyfleet.common.store.scripts import Scripts

TOMBSTONE_DAYS = 30
"""How long a deleted proxy's id is remembered (trimmed when another is deleted)."""


@dataclass(frozen=True, slots=True)
class InstallationMarker:
    installation_id: str
    created_at: float
    """When this registry began (the first writer's clock): resources older than this
    with no entry were made before a reset."""
    created: bool = False
    """This call wrote it (the store was empty)."""
    raw_created_at: str = ""
    """`created_at` as stored (what `mark_listed` compares)."""


@translates_outages
class Installation:
    def __init__(self, client: aioredis.Redis, clock: Clock, *, namespace: str = "pf") -> None:
        self._redis = client
        self._clock = clock
        self._ns = namespace
        self._scripts = Scripts(client, namespace)

    async def mark(self, installation_id: str) -> InstallationMarker:
        """Write the marker unless there is one; returns the marker in place (whose
        installation id may differ from ours: then this is another installation's store)."""
        got = await self._scripts.call(
            "mark_installation", installation_id, repr(self._clock.now())
        )
        return InstallationMarker(str(got[0]), float(got[1]), got[2] == "1", str(got[1]))

    async def mark_listed(self, provider: str, marker: InstallationMarker) -> bool:
        """Record that `provider`'s resources were listed (its survivors re-adopted) under
        `marker`; False when the store was reset since (another marker)."""
        written = await self._scripts.call(
            "mark_listed", provider, repr(self._clock.now()), marker.raw_created_at
        )
        return bool(int(written))

    async def listed(self, providers: Sequence[str]) -> dict[str, bool]:
        """Which providers were listed since this registry began (none without a marker):
        until then a resource that outlived a reset may still come back."""
        if not providers:
            return {}
        got = await self._redis.hmget(
            f"{self._ns}:installation", [f"listed:{p}" for p in providers]
        )
        return {p: v is not None for p, v in zip(providers, got, strict=True)}

    async def marker(self) -> InstallationMarker | None:
        raw = cast(dict[str, str], await self._redis.hgetall(f"{self._ns}:installation"))
        if not raw:
            return None
        return InstallationMarker(raw.get("installation_id", ""), float(raw.get("created_at", 0)))

    async def tombstoned(self, proxy_ids: Sequence[str]) -> set[str]:
        """The ids among `proxy_ids` of proxies that were deleted (within TOMBSTONE_DAYS)."""
        if not proxy_ids:
            return set()
        scores = await self._redis.zmscore(f"{self._ns}:tombstones", list(proxy_ids))
        return {pid for pid, s in zip(proxy_ids, scores, strict=True) if s is not None}
