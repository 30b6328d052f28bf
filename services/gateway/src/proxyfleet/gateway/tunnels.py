"""The connections this replica relays, by lease and by proxy: what a lease event, a failed
renew or the idle check closes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from proxyfleet.common.store.lease_terms import GrantedProxy
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
    up_from: int = 0
    """What the client side had relayed when this relay began (a plain connection's
    earlier requests were another relay's)."""

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
    """A lease with connections of this replica on it, relayed or still reaching their
    upstream (an end event may come before the relay starts)."""

    hold: Hold
    ended: str = ""
    """Why the lease ended ("" while it has not)."""
    connections: int = 0
    """Connections that expect it (from their grant to their end)."""
    relays: set[Relay] = field(default_factory=set)
    """Those of them being relayed now."""
    up: int = 0
    down: int = 0
    """Bytes its relays that ended carried (recorded on the lease when it is released)."""


Relayed = Callable[[Hold, int, int], None]
"""Told of each relay's bytes up and down as it ends."""


class Tunnels:
    def __init__(self, relayed: Relayed | None = None) -> None:
        self.relayed = relayed
        """Told of each relay's bytes as it ends (set once at assembly)."""
        self._held: dict[str, _Held] = {}
        self._sessions: dict[tuple[str, str], int] = {}
        self._leases: dict[str, int] = {}
        """Leases held here by each owner (a client's limit counts them)."""

    def expect(self, hold: Hold) -> None:
        """A connection rides on `hold` from now on (`forget` when it ends)."""
        self._held_for(hold).connections += 1

    def forget(self, lease_id: str) -> None:
        """A connection that expected the lease has ended."""
        if (held := self._held.get(lease_id)) is not None:
            held.connections -= 1
            self._drop_if_unused(lease_id, held)

    def bytes_of(self, lease_id: str) -> tuple[int, int]:
        """Bytes up and down the ended relays of this replica carried on the lease."""
        held = self._held.get(lease_id)
        return (held.up, held.down) if held is not None else (0, 0)

    def leases_of(self, owner: str) -> int:
        """Leases that connections of this replica hold for `owner`."""
        return self._leases.get(owner, 0)

    def holds_session(self, owner: str, session: str) -> bool:
        """Whether a connection of this replica rides on the session's lease."""
        return any(h.hold.owner == owner and h.hold.session == session for h in self._held.values())

    def ended(self, lease_id: str) -> str:
        """Why the lease of a connection of this replica ended ("" while it has not, or
        when no connection rides on it)."""
        held = self._held.get(lease_id)
        return held.ended if held is not None else ""

    def add(self, relay: Relay) -> None:
        """Relay from now on; one whose lease ended while it reached the upstream is
        closed at once."""
        held = self._held_for(relay.hold)
        held.relays.add(relay)
        relay.up_from = relay.client.relayed
        OPEN_TUNNELS.inc()
        if session := relay.hold.session:
            key = (relay.hold.owner, session)
            self._sessions[key] = self._sessions.get(key, 0) + 1
            SESSIONS_ACTIVE.set(len(self._sessions))
        if held.ended:
            relay.close(held.ended)

    def remove(self, relay: Relay) -> None:
        held = self._held.get(relay.hold.lease_id)
        if held is None or relay not in held.relays:
            return
        held.relays.discard(relay)
        up, down = relay.client.relayed - relay.up_from, relay.upstream.relayed
        held.up += up
        held.down += down
        self._drop_if_unused(relay.hold.lease_id, held)
        if self.relayed is not None:
            self.relayed(relay.hold, up, down)
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
        held = self._held.get(lease_id)
        if held is None:
            return 0
        held.ended = why
        relays = list(held.relays)
        for relay in relays:
            relay.close(why)
        return len(relays)

    def close_proxy(self, proxy_id: str, why: str) -> int:
        leases = [lid for lid, held in self._held.items() if held.hold.proxy.id == proxy_id]
        return sum(self.close_lease(lease_id, why) for lease_id in leases)

    def holds(self) -> list[Hold]:
        """One hold per lease with a connection being relayed."""
        return [held.hold for held in self._held.values() if held.relays]

    def __iter__(self) -> Iterator[Relay]:
        for held in list(self._held.values()):
            yield from list(held.relays)

    def __len__(self) -> int:
        return sum(len(held.relays) for held in self._held.values())

    def close_all(self, why: str) -> None:
        for relay in self:
            relay.close(why)

    def _held_for(self, hold: Hold) -> _Held:
        held = self._held.get(hold.lease_id)
        if held is None:
            held = self._held[hold.lease_id] = _Held(hold)
            self._leases[hold.owner] = self._leases.get(hold.owner, 0) + 1
        return held

    def _drop_if_unused(self, lease_id: str, held: _Held) -> None:
        if held.connections <= 0 and not held.relays:
            del self._held[lease_id]
            owner = held.hold.owner
            if left := self._leases.get(owner, 1) - 1:
                self._leases[owner] = left
            else:
                self._leases.pop(owner, None)
