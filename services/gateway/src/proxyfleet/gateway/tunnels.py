"""The connections this replica relays, by lease and by proxy: what a lease event, a failed
renew or the idle check closes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from proxyfleet.common.store.leases import GrantedProxy
from proxyfleet.gateway.metrics import OPEN_TUNNELS, SESSIONS_ACTIVE
from proxyfleet.gateway.splice import Side


@dataclass(frozen=True, slots=True)
class Hold:
    """A lease a connection rides on, with its proxy as the grant (or registry) gave it."""

    lease_id: str
    epoch: int
    proxy: GrantedProxy
    owner: str
    """The token name the lease belongs to."""
    target: str
    session: str = ""
    ends_at: float = 0.0
    """A session's end (seconds since the epoch); its lease is never renewed past it."""


@dataclass(eq=False, slots=True)
class Relay:
    """One client connection, relayed through `hold`'s proxy."""

    hold: Hold
    client: Side
    upstream: Side
    ended: str = ""
    """Why the gateway closed it ("" while open or closed by an end)."""

    @property
    def last_active(self) -> float:
        """When a byte last arrived from either end (time.monotonic())."""
        return max(self.client.last_active, self.upstream.last_active)

    def close(self, why: str) -> None:
        if not self.ended:
            self.ended = why
        self.client.abort()
        self.upstream.abort()


class Tunnels:
    def __init__(self) -> None:
        self._by_lease: dict[str, set[Relay]] = {}
        self._sessions: dict[tuple[str, str], int] = {}

    def add(self, relay: Relay) -> None:
        self._by_lease.setdefault(relay.hold.lease_id, set()).add(relay)
        OPEN_TUNNELS.inc()
        if session := relay.hold.session:
            key = (relay.hold.owner, session)
            self._sessions[key] = self._sessions.get(key, 0) + 1
            SESSIONS_ACTIVE.set(len(self._sessions))

    def remove(self, relay: Relay) -> None:
        relays = self._by_lease.get(relay.hold.lease_id)
        if relays is None or relay not in relays:
            return
        relays.discard(relay)
        if not relays:
            del self._by_lease[relay.hold.lease_id]
        OPEN_TUNNELS.dec()
        if session := relay.hold.session:
            key = (relay.hold.owner, session)
            left = self._sessions.get(key, 1) - 1
            if left:
                self._sessions[key] = left
            else:
                self._sessions.pop(key, None)
            SESSIONS_ACTIVE.set(len(self._sessions))

    def close_lease(self, lease_id: str, why: str) -> int:
        relays = list(self._by_lease.get(lease_id, ()))
        for relay in relays:
            relay.close(why)
        return len(relays)

    def close_proxy(self, proxy_id: str, why: str) -> int:
        found = [r for r in self if r.hold.proxy.id == proxy_id]
        for relay in found:
            relay.close(why)
        return len(found)

    def holds(self) -> list[Hold]:
        """One hold per lease with an open connection."""
        return [next(iter(relays)).hold for relays in self._by_lease.values() if relays]

    def __iter__(self) -> Iterator[Relay]:
        for relays in list(self._by_lease.values()):
            yield from list(relays)

    def __len__(self) -> int:
        return sum(len(r) for r in self._by_lease.values())

    def close_all(self, why: str) -> None:
        for relay in self:
            relay.close(why)
