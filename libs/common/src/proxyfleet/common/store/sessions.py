"""Gateway sessions: which lease a sticky session (`-session-<id>` in a proxy username)
rides on. In Redis, so any gateway replica serves any session; one key per (owner,
session), expiring when the session does. A claim is compare-and-set in one script, so
two replicas that both find a session new (or its lease ended) agree on one lease."""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis

from proxyfleet.common.store.outage import translates_outages

# KEYS[1] the session key; ARGV: expected lease id ("" = none), new value, expiry (ms).
# Returns the value the key holds afterwards (the new one, or the winner's).
_CLAIM = """
local cur = redis.call('GET', KEYS[1])
local cur_id = ''
if cur then cur_id = string.match(cur, '^([^|]*)') end
if cur_id == ARGV[1] or not cur then
  redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
  return ARGV[2]
end
return cur
"""
_DROP = """
local cur = redis.call('GET', KEYS[1])
if cur and string.match(cur, '^([^|]*)') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True, slots=True)
class SessionLease:
    lease_id: str
    epoch: int
    ends_at: float
    """When the session ends (seconds since the epoch): its lease is never renewed past it."""

    def encode(self) -> str:
        return f"{self.lease_id}|{self.epoch}|{self.ends_at!r}"

    @classmethod
    def decode(cls, raw: str) -> SessionLease:
        lease_id, epoch, ends_at = raw.split("|")
        return cls(lease_id, int(epoch), float(ends_at))


@translates_outages
class SessionStore:
    def __init__(self, client: aioredis.Redis, *, namespace: str = "pf") -> None:
        self._redis = client
        self._ns = namespace
        self._claim = client.register_script(_CLAIM)
        self._drop = client.register_script(_DROP)

    def _key(self, owner: str, session: str) -> str:
        # The owner (token name) is part of the key: one client never rides another's session.
        return f"{self._ns}:gwsession:{owner}:{session}"

    async def get(self, owner: str, session: str) -> SessionLease | None:
        raw = await self._redis.get(self._key(owner, session))
        return None if raw is None else SessionLease.decode(str(raw))

    async def claim(
        self, owner: str, session: str, new: SessionLease, replaces: str = ""
    ) -> SessionLease:
        """Bind the session to `new` if it is unbound or still bound to lease `replaces`;
        returns the binding that holds afterwards (another replica's if it won)."""
        raw = await self._claim(
            keys=[self._key(owner, session)],
            args=[replaces, new.encode(), int(new.ends_at * 1000)],
        )
        return SessionLease.decode(str(raw))

    async def drop(self, owner: str, session: str, lease_id: str) -> None:
        """Unbind the session if it is still bound to that lease."""
        await self._drop(keys=[self._key(owner, session)], args=[lease_id])
