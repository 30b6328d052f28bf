"""The outbox: a Redis stream the store's scripts append events and intents to, read by
relays (proxyfleet.common.messaging.relay) through one consumer group shared by every replica.

An entry is published, then acked and deleted: at least once, and JetStream drops a second
copy within its duplicate window (the entry's id is the message's `Nats-Msg-Id`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import outbox_codec
from proxyfleet.common.store.outage import translates_outages

log = get_logger(__name__)

GROUP = "relay"
"""The consumer group every relay of every service reads through."""


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    entry_id: str
    """The stream entry id (what XACK and XDEL name)."""
    subject: str
    msg_id: str
    """The event id, or an intent's dedupe key: the `Nats-Msg-Id`."""
    body: bytes


@dataclass(frozen=True, slots=True)
class Backlog:
    length: int
    """Entries not yet published and acked."""
    oldest_age: float
    """Seconds since the oldest of them was written (0 when there is none)."""
    used_memory: int = 0
    """Bytes Redis uses (INFO used_memory)."""
    max_memory: int = 0
    """Redis's maxmemory (0: none set)."""


def _entries(rows: Sequence[Any]) -> list[OutboxEntry]:
    out = []
    for entry_id, fields in rows:
        if not fields:  # None: deleted after it was read (XAUTOCLAIM skips those itself)
            continue
        try:
            record = fields.get(outbox_codec.FIELD)
            if record is None:  # an intent, or an event appended from Python
                out.append(OutboxEntry(entry_id, fields["s"], fields["i"], fields["d"].encode()))
            else:
                out.append(OutboxEntry(entry_id, *outbox_codec.expand(record)))
        except (KeyError, outbox_codec.BadRecord) as exc:
            # Left unacked, for a relay that can read it (one of a newer version); the
            # others go on. The length and age of the backlog show it waiting.
            log.warning("outbox.entry_unreadable", entry_id=entry_id, error=repr(exc))
    return out


@translates_outages
class Outbox:
    def __init__(self, client: aioredis.Redis, namespace: str = "pf") -> None:
        self._redis = client
        self.key = f"{namespace}:outbox"

    async def ensure_group(self) -> None:
        """Create the stream and its group (idempotent). A new group starts at the
        beginning, so entries written while no relay ran are published too."""
        try:
            await self._redis.xgroup_create(self.key, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def append(self, subject: str, msg_id: str, body: bytes) -> None:
        """Queue one message the way the scripts do (`outbox_add` in _lib.lua): for an
        event that is no state change of the store (a static provider's bad line)."""
        await self._redis.xadd(self.key, {"s": subject, "i": msg_id, "d": body})

    async def peek(self) -> list[OutboxEntry]:
        """Every entry waiting, oldest first, as a relay would publish it; read past the
        group (diagnostics and tests: nothing is claimed)."""
        return _entries(cast(list[Any], await self._redis.xrange(self.key)))

    async def read(self, consumer: str, count: int) -> list[OutboxEntry]:
        """New entries for `consumer`, at most `count`, without waiting (no BLOCK: the
        relay polls when idle, so it never holds a pooled connection and stops at once)."""
        try:
            reply = await self._redis.xreadgroup(GROUP, consumer, {self.key: ">"}, count=count)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            await self.ensure_group()  # the stream was deleted (FLUSHDB, a new Redis)
            return []
        rows = cast(list[Any], reply)  # RESP2: [[stream, [(id, fields), ...]]]
        return _entries(rows[0][1]) if rows else []

    async def claim(
        self, consumer: str, min_idle: float, count: int, start: str = "0-0"
    ) -> tuple[list[OutboxEntry], str]:
        """Take over entries another relay read but did not ack within `min_idle`
        seconds (it died); returns them and the cursor to continue from ('0-0': done)."""
        try:
            reply = await self._redis.xautoclaim(
                self.key, GROUP, consumer, int(min_idle * 1000), start_id=start, count=count
            )
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            await self.ensure_group()
            return [], "0-0"
        return _entries(reply[1]), str(reply[0])

    async def ack(self, entry_ids: Sequence[str]) -> int:
        """Ack and delete published entries (one round trip); returns the outbox length."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xack(self.key, GROUP, *entry_ids)
            pipe.xdel(self.key, *entry_ids)
            pipe.xlen(self.key)
            replies = await pipe.execute()
        return int(replies[-1])

    async def length(self) -> int:
        """Entries not yet published and acked (the relays' backlog)."""
        return int(await self._redis.xlen(self.key))

    async def backlog(self, now: float) -> Backlog:
        """Length and oldest entry's age at `now`, and Redis's memory (one round trip; the
        age comes from the entry id, which is Redis' clock in milliseconds when it was
        written)."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xlen(self.key)
            pipe.xrange(self.key, "-", "+", count=1)
            pipe.info("memory")
            length, first, memory = await pipe.execute()
        used, limit = int(memory.get("used_memory", 0)), int(memory.get("maxmemory", 0))
        if not first:
            return Backlog(int(length), 0.0, used, limit)
        written = int(str(first[0][0]).split("-", 1)[0]) / 1000
        return Backlog(int(length), max(0.0, now - written), used, limit)

    async def pending(self) -> int:
        """Entries read by some relay and not acked yet."""
        try:
            info = await self._redis.xpending(self.key, GROUP)
        except ResponseError:
            return 0
        return int(info["pending"])
