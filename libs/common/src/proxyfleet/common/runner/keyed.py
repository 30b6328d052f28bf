"""One intent per proxy at a time in this process.

Two deliveries of intents for one proxy can be in hand at once (the API's create and the
reconciler's republished one, a redelivery while the first is still running): run side by
side, two adapter creates of one proxy race on its resources (seen: a KVM create deleting
the seed volume the other was uploading). The second now waits, then finds the proxy
moved on. Replicas are kept apart by the registry's generation checks and the adapters'
adoption, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class KeyedLocks:
    """An asyncio lock per key, dropped once nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)

    def busy(self, key: str) -> bool:
        """Someone holds or waits for `key`'s lock."""
        return key in self._locks
