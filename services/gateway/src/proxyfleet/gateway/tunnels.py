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


@dataclass(slots=True)
class _Held:
    hold: Hold
    ended: str = ""
    """Why the lease ended ("" while it has not)."""
    connections: int = 0


class Tunnels:
    def __init__(self) -> None:
        self._by_lease: dict[str, set[Relay]] = {}
        self._sessions: dict[tuple[str, str], int] = {}
        self._held: dict[str, _Held] = {}
        """The lease of every connection from its grant to its end, relayed or not yet
        (still reaching the upstream): an end event may come before the relay starts."""

    def expect(self, hold: Hold) -> None:
        """A connection rides on `hold` from now on (`forget` when it ends)."""
        held = self._held.setdefault(hold.lease_id, _Held(hold))
        held.connections += 1

    def forget(self, lease_id: str) -> None:
        """A connection that expected the lease has ended."""
        held = self._held.get(lease_id)
        if held is not None:
            held.connections -= 1
            if held.connections <= 0:
                del self._held[lease_id]

    def ended(self, lease_id: str) -> str:
        """Why the lease of a connection of this replica ended ("" while it has not, or
        when no connection rides on it)."""
        held = self._held.get(lease_id)
        return held.ended if held is not None else ""

    def add(self, relay: Relay) -> None:
        """Relay from now on; one whose lease ended while it reached the upstream is
        closed at once."""
        held = self._held.get(relay.hold.lease_id)
        ended = held.ended if held is not None else ""
        self._by_lease.setdefault(relay.hold.lease_id, set()).add(relay)
        OPEN_TUNNELS.inc()
        if session := relay.hold.session:
            key = (relay.hold.owner, session)
            self._sessions[key] = self._sessions.get(key, 0) + 1
            SESSIONS_ACTIVE.set(len(self._sessions))
        if ended:
            relay.close(ended)

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
        if (held := self._held.get(lease_id)) is not None:
            held.ended = why
        relays = list(self._by_lease.get(lease_id, ()))
        for relay in relays:
            relay.close(why)
        return len(relays)

    def close_proxy(self, proxy_id: str, why: str) -> int:
        for held in self._held.values():
            if held.hold.proxy.id == proxy_id:
                held.ended = why
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
