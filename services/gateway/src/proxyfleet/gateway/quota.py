"""Each client token's use of this replica against its limits, with what the other replicas
reported at the last sync (`quota_sync`, every --limits-sync-interval). Pure: no I/O; a
connection is admitted or refused from memory, never after a round trip.

How far off it may be (docs/gateway.md; decision GW17): the other replicas' connections and
leases are as of the last sync, so replicas admitting at once may together pass a limit
by what they admit within one interval; the rate is split evenly, each live replica
refilling 1/R of it; bytes are the day's total at the last sync plus this replica's since."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.store.client_usage import ClientCounts, ClientTotals
from proxyfleet.gateway.client_limits import ClientLimit
from proxyfleet.gateway.refusals import over_limit

DAY = 86_400.0


def utc_day(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


@dataclass(slots=True)
class Bucket:
    """A token bucket for new connections: `rate` a second, up to `size` at once."""

    rate: float
    size: float
    tokens: float
    at: float

    def take(self, now: float, share: int) -> float:
        """Take a token: 0.0, else the seconds until one is there. This replica holds
        1/`share` of the rate and of the bucket (`share`: the replicas alive)."""
        rate, size = self.rate / share, max(1.0, self.size / share)
        self.tokens = min(size, self.tokens + max(0.0, now - self.at) * rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate


@dataclass(slots=True)
class ClientUse:
    limit: ClientLimit
    bucket: Bucket | None
    connections: int = 0
    """Open on this replica."""
    others_connections: int = 0
    others_leases: int = 0
    day: str = ""
    bytes_today: int = 0
    """Every replica's bytes of `day` at the last sync, with this replica's since."""
    up: int = 0
    down: int = 0
    opened: int = 0
    """Since the last sync: what it adds to the day's usage in Redis."""


class Quota:
    def __init__(
        self, limits: dict[str, ClientLimit], clock: Clock, leases_of: Callable[[str], int]
    ) -> None:
        now = clock.now()
        self._clock = clock
        self._leases_of = leases_of
        """Leases this replica's connections of a client hold now."""
        self._use = {name: ClientUse(limit, _bucket(limit, now)) for name, limit in limits.items()}
        self.replicas = 1
        """Gateway replicas alive at the last sync."""
        self._refusals: dict[tuple[str, str], int] = {}
        self._day, self._day_ends = "", 0.0

    def _today(self, now: float) -> str:
        """The UTC day of `now` (formatted once a day, not per connection)."""
        if not self._day_ends - DAY <= now < self._day_ends:
            self._day, self._day_ends = utc_day(now), now - now % DAY + DAY
        return self._day

    def refused(self, client: str, limit: str) -> None:
        """A connection of `client` was refused at `limit` (logged in a batch per sync)."""
        key = (client, limit)
        self._refusals[key] = self._refusals.get(key, 0) + 1

    def take_refusals(self) -> dict[tuple[str, str], int]:
        """The refusals since the last call, by client and limit."""
        out, self._refusals = self._refusals, {}
        return out

    def admit(self, client: str) -> None:
        """A new connection of `client`: counted, or Refused (429) at one of its limits."""
        use = self._use[client]
        limit = use.limit
        if limit.any:
            self._check(client, use, limit)
        use.connections += 1
        use.opened += 1

    def connections(self, client: str) -> int:
        """`client`'s connections over every replica, as known here."""
        use = self._use[client]
        return use.connections + use.others_connections

    def left(self, client: str) -> None:
        """An admitted connection ended."""
        self._use[client].connections -= 1

    def limits_leases(self, client: str) -> bool:
        return bool(self._use[client].limit.leases)

    def check_lease(self, client: str) -> None:
        """Refused (429) when a new lease would take `client` over its leases limit."""
        use = self._use[client]
        most = use.limit.leases
        if most and self._leases_of(client) + use.others_leases >= most:
            raise over_limit(client, "leases", f"at its limit of {most} leases", 1.0)

    def relayed(self, client: str, up: int, down: int) -> None:
        use = self._use[client]
        use.up += up
        use.down += down
        use.bytes_today += up + down

    def reports(self) -> list[ClientCounts]:
        """What to send now (the deltas are taken: `restore` them if the sync fails)."""
        out = []
        for name, use in self._use.items():
            if not (use.limit.any or use.connections or use.up or use.down or use.opened):
                continue
            out.append(ClientCounts(
                name, use.connections, self._leases_of(name), use.up, use.down, use.opened
            ))  # fmt: skip
            use.up = use.down = use.opened = 0
        return out

    def restore(self, reports: list[ClientCounts]) -> None:
        """A sync failed: its deltas go with the next one."""
        for r in reports:
            use = self._use[r.client]
            use.up, use.down, use.opened = use.up + r.up, use.down + r.down, use.opened + r.opened

    def apply(self, day: str, replicas: int, totals: dict[str, ClientTotals]) -> None:
        """What a sync of `day` answered."""
        self.replicas = max(1, replicas)
        for name, t in totals.items():
            use = self._use[name]
            use.others_connections, use.others_leases = t.others_connections, t.others_leases
            use.day = day
            use.bytes_today = t.bytes_today + use.up + use.down  # with what came meanwhile

    def _check(self, client: str, use: ClientUse, limit: ClientLimit) -> None:
        if limit.connections and use.connections + use.others_connections >= limit.connections:
            message = f"at its limit of {limit.connections} connections"
            raise over_limit(client, "connections", message, 1.0)
        now = self._clock.now()
        if limit.bytes_per_day:
            if use.day != (today := self._today(now)):
                use.day, use.bytes_today = today, use.up + use.down
            if use.bytes_today >= limit.bytes_per_day:
                message = f"at its limit of {limit.bytes_per_day} bytes today (UTC)"
                raise over_limit(client, "bytes_per_day", message, DAY - now % DAY)
        if use.bucket is not None and (wait := use.bucket.take(now, self.replicas)):
            raise over_limit(client, "rate", f"over {limit.rate:g} new connections/s", wait)


def _bucket(limit: ClientLimit, now: float) -> Bucket | None:
    if not limit.rate:
        return None
    return Bucket(limit.rate, limit.bucket_size, limit.bucket_size, now)
