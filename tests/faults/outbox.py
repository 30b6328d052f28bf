"""The fault suite's view of the outbox: how much waits in it, and the waits before an
audit (every entry published, or every entry written up to a moment published)."""

from __future__ import annotations

import contextlib
import time

import redis
from tests.faults.audit import Finding
from tests.faults.sentinel_stores import sync_client

NAMESPACE = "pf"
SETTLE = 60.0
"""Bound on waiting for the outbox to drain after a fault."""


class OutboxProbe:
    def __init__(self, redis_url: str) -> None:
        self._url = redis_url
        self._key = f"{NAMESPACE}:outbox"

    def length(self) -> int:
        with sync_client(self._url) as r:
            return int(r.xlen(self._key))

    def mark(self) -> str:
        """The id of the newest entry in the outbox ("0-0" when it is empty: everything
        written so far is published)."""
        with sync_client(self._url) as r:
            newest = r.xrevrange(self._key, count=1)
            return newest[0][0].decode() if newest else "0-0"

    def holds_up_to(self, mark: str) -> bool:
        """Whether an entry written at or before `mark` is still in the outbox (unpublished
        or not yet acked by JetStream)."""
        with sync_client(self._url) as r:
            return bool(r.xrange(self._key, "-", mark, count=1))

    def settle(self) -> list[Finding]:
        """Wait for the outbox to drain (every written event published) before auditing."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < SETTLE:
            with contextlib.suppress(redis.RedisError):  # Redis still coming back: wait
                if self.length() == 0:
                    return []
            time.sleep(0.2)
        return [Finding("outbox_stuck", f"{self.length()} entries after {SETTLE}s")]

    def published(self, mark: str) -> list[Finding]:
        """Wait until the outbox holds no entry written up to `mark` (each one published
        to JetStream and acked), so the stream read next has them all."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < SETTLE:
            with contextlib.suppress(redis.RedisError):
                if not self.holds_up_to(mark):
                    return []
            time.sleep(0.1)
        return [Finding("outbox_stuck", f"entries up to {mark} after {SETTLE}s")]
