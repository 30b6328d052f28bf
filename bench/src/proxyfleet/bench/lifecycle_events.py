"""Lifecycle events as a plain NATS subscriber sees them, with the time each arrived."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import Event


@dataclass(frozen=True, slots=True)
class Seen:
    event: Event
    received: float
    """time.time() when the subscriber got it (the publisher stamps event.time the same way,
    on the same machine)."""

    @property
    def delay(self) -> float:
        return self.received - self.event.time


@dataclass
class EventLog:
    """Every event on proxyfleet.events.>, decoded after the fact (the callback only keeps
    the bytes and the arrival time, so the subscriber never falls behind)."""

    raw: list[tuple[bytes, float]] = field(default_factory=list)

    async def subscribe(self, nc: NatsClient) -> None:
        async def on_msg(msg: Msg) -> None:
            self.raw.append((msg.data, time.time()))

        await nc.subscribe(f"{subjects.EVENT_PREFIX}.>", cb=on_msg)
        await nc.flush()

    def seen(self) -> list[Seen]:
        return [Seen(event_decoder.decode(data), at) for data, at in self.raw]

    def of(self, proxy_ids: Iterable[str]) -> list[Seen]:
        wanted = set(proxy_ids)
        return [s for s in self.seen() if s.event.proxy_id in wanted]

    async def wait_settled(self, proxy_ids: list[str], within: float) -> dict[str, Seen]:
        """The first `proxy.ready` or `proxy.failed` event of each proxy, once every proxy
        has one (or `within` seconds passed: then the ones seen)."""
        deadline = time.monotonic() + within
        while True:
            ends = self.first_of(proxy_ids, ("proxy.ready", "proxy.failed"))
            if len(ends) == len(proxy_ids) or time.monotonic() > deadline:
                return ends
            await asyncio.sleep(0.05)

    def first_of(self, proxy_ids: Iterable[str], types: tuple[str, ...]) -> dict[str, Seen]:
        first: dict[str, Seen] = {}
        for s in self.of(proxy_ids):
            if s.event.type in types and s.event.proxy_id not in first:
                first[s.event.proxy_id] = s
        return first


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
