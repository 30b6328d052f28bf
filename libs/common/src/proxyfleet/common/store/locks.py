"""Named locks with a token and a ttl (`<ns>:lock:<name>`): at most one holder at a time,
taken with SET NX PX, extended and released only by the token that holds it, and free
again once its ttl passes without a renewal (a holder that died). GC holds one per
provider for its rounds (docs/decisions/scaling.md, S3)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import cast

import redis.asyncio as aioredis

from proxyfleet.common.store.outage import translates_outages
from proxyfleet.common.store.scripts import Scripts


def px(ttl: float) -> int:
    """Redis' PX is whole milliseconds; at least one (0 would be an error)."""
    return max(1, round(ttl * 1000))


@translates_outages
class Locks:
    def __init__(self, client: aioredis.Redis, *, namespace: str = "pf") -> None:
        self._redis = client
        self._ns = namespace
        self._scripts = Scripts(client, namespace)

    def key(self, name: str) -> str:
        return f"{self._ns}:lock:{name}"

    async def acquire(self, names: Sequence[str], token: str, ttl: float) -> list[str]:
        """Take each lock that is free, extend each `token` holds already, for `ttl`
        seconds. Returns the holder of each name, in order (`token` where it is ours)."""
        if not names:
            return []
        got = await self._scripts.call("lock_acquire", token, px(ttl), *names)
        return [str(h) for h in cast(list[str], got)]

    async def renew(self, names: Collection[str], token: str, ttl: float) -> set[str]:
        """Extend, for `ttl` seconds, each lock among `names` that `token` still holds;
        returns those. One that expired (even if nobody took it since) is not taken again:
        its holder's work must start over with acquire."""
        if not names:
            return set()
        got = await self._scripts.call("lock_renew", token, px(ttl), *names)
        return {str(n) for n in cast(list[str], got)}

    async def release(self, names: Collection[str], token: str) -> set[str]:
        """Delete each lock among `names` that `token` holds; returns those."""
        if not names:
            return set()
        got = await self._scripts.call("lock_release", token, *names)
        return {str(n) for n in cast(list[str], got)}

    async def holder(self, name: str) -> str:
        """The token holding `name` now ('' when it is free)."""
        return cast(str | None, await self._redis.get(self.key(name))) or ""
