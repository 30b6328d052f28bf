"""Pins (`<ns>:pin:<scope>:<key>`): a short value kept for a key for a while, shared by
every replica and gone once its ttl passes (a pin whose writer died never holds forever).
The KVM provisioner pins a proxy to the host it began building the proxy's VM on
(docs/decisions/kvm.md, V6)."""

from __future__ import annotations

from typing import cast

import redis.asyncio as aioredis

from proxyfleet.common.store.locks import px
from proxyfleet.common.store.outage import translates_outages


@translates_outages
class Pins:
    def __init__(self, client: aioredis.Redis, scope: str, *, namespace: str = "pf") -> None:
        self._redis = client
        self._prefix = f"{namespace}:pin:{scope}:"

    def key(self, name: str) -> str:
        return self._prefix + name

    async def get(self, name: str) -> str | None:
        """The value pinned to `name`, or None (never pinned, dropped or expired)."""
        return cast(str | None, await self._redis.get(self.key(name)))

    async def put(self, name: str, value: str, ttl: float) -> None:
        """Pin `value` to `name` for `ttl` seconds from now (replacing an earlier pin)."""
        await self._redis.set(self.key(name), value, px=px(ttl))

    async def drop(self, name: str) -> None:
        await self._redis.delete(self.key(name))
