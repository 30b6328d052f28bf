"""Client usage, shared by the gateway replicas: each replica's open connections and
leases per client (what the other replicas' limits count), and each client's bytes and
connections per UTC day (what a day's byte limit and `GET /v1/usage` read). Written in
batches, one script call per replica every --limits-sync-interval, never per connection."""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.store.outage import translates_outages

USAGE_DAYS = 400
"""Days a client's daily usage stays in Redis (a hash of three counters a day)."""

# KEYS: the replicas' zset, then per client its counts hash and its usage hash of the day.
# ARGV: replica id, seconds after which a silent replica is gone, the usage TTL, then per
# client: connections, leases, bytes up, bytes down, connections opened.
# Redis's own TIME: the replicas' clocks may disagree.
SYNC = """
local replica, stale, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZADD', KEYS[1], now, replica)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - stale)
local live = {}
for _, r in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do live[r] = true end
local out = {redis.call('ZCARD', KEYS[1])}
for i = 0, (#KEYS - 1) / 2 - 1 do
  local counts, usage, a = KEYS[2 + 2 * i], KEYS[3 + 2 * i], 4 + 5 * i
  local up, down, opened = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  redis.call('HSET', counts, replica .. '|c', ARGV[a], replica .. '|l', ARGV[a + 1])
  redis.call('EXPIRE', counts, math.ceil(stale) + 60)
  local oc, ol = 0, 0
  local all = redis.call('HGETALL', counts)
  for j = 1, #all, 2 do
    local r, kind = string.match(all[j], '^(.*)|(%a)$')
    if r ~= replica then
      if not live[r] then
        redis.call('HDEL', counts, all[j])
      elseif kind == 'c' then
        oc = oc + tonumber(all[j + 1])
      else
        ol = ol + tonumber(all[j + 1])
      end
    end
  end
  if up > 0 then redis.call('HINCRBY', usage, 'bytes_up', up) end
  if down > 0 then redis.call('HINCRBY', usage, 'bytes_down', down) end
  if opened > 0 then redis.call('HINCRBY', usage, 'connections', opened) end
  if up + down + opened > 0 then redis.call('EXPIRE', usage, ttl) end
  local got = redis.call('HMGET', usage, 'bytes_up', 'bytes_down')
  table.insert(out, oc)
  table.insert(out, ol)
  table.insert(out, (tonumber(got[1]) or 0) + (tonumber(got[2]) or 0))
end
return out
"""


@dataclass(frozen=True, slots=True)
class ClientCounts:
    """What a replica sends for one client: its counts now, and deltas since its last sync."""

    client: str
    connections: int
    leases: int
    up: int
    down: int
    opened: int


@dataclass(frozen=True, slots=True)
class ClientTotals:
    """What it gets back: the other live replicas' counts, and the day's bytes so far."""

    others_connections: int
    others_leases: int
    bytes_today: int


@dataclass(frozen=True, slots=True)
class DayUsage:
    day: str
    """YYYY-MM-DD (UTC)."""
    bytes_up: int
    bytes_down: int
    connections: int


@translates_outages
class ClientUsageStore:
    def __init__(
        self, client: aioredis.Redis, *, namespace: str = "pf", clock: Clock | None = None
    ) -> None:
        self._redis = client
        self._ns = namespace
        self._clock = clock or SystemClock()
        self._sync = client.register_script(SYNC)

    def _usage_key(self, client: str, day: str) -> str:
        return f"{self._ns}:usage:{client}:{day}"

    async def sync(
        self, replica: str, stale: float, day: str, counts: list[ClientCounts]
    ) -> tuple[int, dict[str, ClientTotals]]:
        """Send one replica's counts (a replica silent for `stale` seconds is gone); the
        live replicas and each client's totals."""
        keys = [f"{self._ns}:gwreplicas"]
        args: list[str | int | float] = [replica, stale, USAGE_DAYS * 86_400]
        for c in counts:
            keys += [f"{self._ns}:gwlimits:{c.client}", self._usage_key(c.client, day)]
            args += [c.connections, c.leases, c.up, c.down, c.opened]
        values = [int(v) for v in await self._sync(keys=keys, args=args)]
        totals = {
            c.client: ClientTotals(*values[1 + 3 * i : 4 + 3 * i]) for i, c in enumerate(counts)
        }
        return values[0], totals

    async def recent(self, client: str, days: int) -> list[DayUsage]:
        """A client's usage on the last `days` UTC days up to today's, oldest first."""
        now = self._clock.now()
        names = [time.strftime("%Y-%m-%d", time.gmtime(now - 86_400 * i)) for i in range(days)]
        return await self.days(client, names[::-1])

    async def days(self, client: str, days: list[str]) -> list[DayUsage]:
        """A client's usage on each of `days` (zeros for a day without any)."""
        pipe = self._redis.pipeline(transaction=False)
        for day in days:
            pipe.hmget(self._usage_key(client, day), "bytes_up", "bytes_down", "connections")
        rows = await pipe.execute()
        return [
            DayUsage(day, *(int(v or 0) for v in row)) for day, row in zip(days, rows, strict=True)
        ]
