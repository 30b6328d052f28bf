"""What the cluster tests compare: every entry the relay took from the outbox against what
each JetStream stream holds, by message id (an event's id, an intent's dedupe key)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import nats.errors
import pytest
from nats.aio.client import Client as NatsClient

from proxyfleet.common.store.outbox import Outbox, OutboxEntry
from proxyfleet.common.wire import subjects

STREAMS = (subjects.EVENT_STREAM, subjects.INTENT_STREAM)


def stream_of(entry: OutboxEntry) -> str:
    intent = entry.subject.startswith(subjects.INTENT_PREFIX)
    return subjects.INTENT_STREAM if intent else subjects.EVENT_STREAM


class OutboxTap:
    """Records every entry a relay reads or claims from `outbox`: once the outbox is empty,
    that is every entry ever written to it (an entry leaves it only when acked)."""

    def __init__(self, outbox: Outbox, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ids: dict[str, set[str]] = {s: set() for s in STREAMS}
        read, claim = outbox.read, outbox.claim

        async def tapped_read(consumer: str, count: int) -> list[OutboxEntry]:
            return self._record(await read(consumer, count))

        async def tapped_claim(*args: Any, **kwargs: Any) -> tuple[list[OutboxEntry], str]:
            entries, cursor = await claim(*args, **kwargs)
            return self._record(entries), cursor

        monkeypatch.setattr(outbox, "read", tapped_read)
        monkeypatch.setattr(outbox, "claim", tapped_claim)

    def _record(self, entries: list[OutboxEntry]) -> list[OutboxEntry]:
        for e in entries:
            self.ids[stream_of(e)].add(e.msg_id)
        return entries


async def stream_ids(nc: NatsClient, stream: str) -> list[str]:
    """The Nats-Msg-Id of every message `stream` holds, in order."""
    js = nc.jetstream()
    state = (await js.stream_info(stream)).state
    ids = []
    for seq in range(state.first_seq, state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        ids.append((msg.headers or {}).get("Nats-Msg-Id", ""))
    return ids


async def assert_each_once(nc: NatsClient, tap: OutboxTap) -> dict[str, int]:
    """Each stream holds every id the outbox gave for it, once, and nothing else; returns
    the count per stream."""
    counts = {}
    for stream in STREAMS:
        held = await stream_ids(nc, stream)
        twice = [i for i, n in Counter(held).items() if n > 1]
        assert not twice, f"{stream}: stored more than once: {twice[:5]}"
        lost = tap.ids[stream] - set(held)
        assert not lost, f"{stream}: {len(lost)} of {len(tap.ids[stream])} lost: {sorted(lost)[:5]}"
        extra = set(held) - tap.ids[stream]
        assert not extra, f"{stream}: not from the outbox: {sorted(extra)[:5]}"
        counts[stream] = len(held)
    return counts


async def stream_leader(nc: NatsClient, stream: str) -> str:
    """The server that leads `stream` now; "" when none answers (no leader, no quorum)."""
    try:
        info = await nc.jetstream(timeout=1.0).stream_info(stream)
    except (nats.errors.Error, TimeoutError):
        return ""
    return (info.cluster.leader or "") if info.cluster else ""


async def until(check: Callable[[], Awaitable[bool]], within: float, what: str) -> float:
    """Poll `check` (state in another process: no event to await) until it holds; returns
    the seconds it took."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < within, f"timed out after {within}s waiting for {what}"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


class LengthWatch:
    """The outbox's longest length while the block runs (sampled every 50 ms)."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.longest = 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async def sample() -> None:
            while True:
                self.longest = max(self.longest, await self._outbox.length())
                await asyncio.sleep(0.05)

        task = asyncio.create_task(sample())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
