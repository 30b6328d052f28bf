"""Which providers this GC replica runs rounds for: one Redis lock per provider
(`<ns>:lock:gc:<provider>`), taken at the start of its round, kept from round to round
while this replica runs them, and checked (renewed, token-compared) before every delete,
so a round that lost its lock (paused past the ttl) sends nothing from its listing.

Every renewal extends every lock held, so no stretch without one is longer than a single
step (a listing, a publish) or the wait between rounds: a ttl above the interval plus the
request timeout keeps the lock with the replica that runs the rounds."""

from __future__ import annotations

from proxyfleet.common.store import Locks


def lock_name(provider: str) -> str:
    return f"gc:{provider}"


class Leadership:
    def __init__(self, locks: Locks, token: str, ttl: float) -> None:
        self._locks = locks
        self.token = token
        self._ttl = ttl
        self._held: set[str] = set()
        """Providers whose lock this replica holds, as far as its last call knew."""

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    async def take(self, provider: str) -> str:
        """Take (or keep) `provider`'s lock and extend the others held. Returns its holder:
        this replica's token when the round is ours to run."""
        await self.keep()
        (holder,) = await self._locks.acquire([lock_name(provider)], self.token, self._ttl)
        if holder == self.token:
            self._held.add(provider)
        else:
            self._held.discard(provider)
        return holder

    async def still_holds(self, provider: str) -> bool:
        """The fencing check before an action on `provider`: its lock is still this
        replica's (extended, with every other held)."""
        await self.keep()
        return provider in self._held

    async def keep(self) -> None:
        """Extend every lock held; forget those lost (expired, or taken by another)."""
        names = {lock_name(p): p for p in self._held}
        kept = await self._locks.renew(names, self.token, self._ttl)
        self._held = {names[n] for n in kept}

    async def release(self) -> None:
        """Give every lock up (a stopping replica: another takes over at its next round)."""
        held, self._held = self._held, set()
        await self._locks.release([lock_name(p) for p in held], self.token)
