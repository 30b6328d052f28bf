"""The outbox relay: publishes what the store's scripts appended to the outbox to JetStream.

Every writing service runs one (replicas share the outbox's consumer group, so each entry
goes to one of them). A relay reads a batch, publishes it, waits for JetStream's acks, then
acks and deletes the whole batch in one Redis round trip. A crash between publish and ack
leaves the entries pending: another relay claims them after `claim_idle` (XAUTOCLAIM) and
publishes them again under the same `Nats-Msg-Id`, which JetStream drops as a duplicate
within its window. So an event is never lost once its state change is written.

Acks: every entry is a JetStream message of its own, and one ack stands for each stream's
share of a batch (`atomic`): on a replicated stream the share is a JetStream atomic batch,
so a leader change in the middle of it loses nothing; on one server, messages are stored
in order and the last one's ack stands for them.

While NATS is disconnected the relay publishes nothing: the client would keep the messages
in its reconnect buffer, and a full buffer drops them (OutboundBufferLimitError). The
outbox holds them instead, in order, for as long as the outage lasts; the relay says how
many are pending and resumes from the oldest once the client has reconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import stamina
from nats.aio.client import Client as NatsClient
from prometheus_client import Counter, Gauge

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.errors import MessagingUnavailable, StoreUnavailable
from proxyfleet.common.messaging.atomic import Batches
from proxyfleet.common.messaging.jetstream import messaging_outage
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import RETRIES
from proxyfleet.common.observability.replica import replica_name
from proxyfleet.common.store.outbox import Backlog, Outbox, OutboxEntry
from proxyfleet.common.wire import subjects

log = get_logger("proxyfleet.relay")

RELAYED = Counter(
    "proxyfleet_outbox_relayed_total", "Outbox entries published to JetStream and acked."
)
RELAY_FAILURES = Counter(
    "proxyfleet_outbox_relay_failures_total",
    "Outbox entries whose publish gave up after its retries (they stay in the outbox).",
)
OUTBOX_LENGTH = Gauge(
    "proxyfleet_outbox_length", "Entries in the outbox not yet published and acked."
)
OUTBOX_OLDEST_AGE = Gauge(
    "proxyfleet_outbox_oldest_age_seconds",
    "Age of the oldest entry in the outbox (0 when it is empty): how late events are.",
)

REDIS_USED_MEMORY = Gauge(
    "proxyfleet_redis_used_memory_bytes",
    "Memory Redis uses (INFO used_memory), read with the outbox's backlog.",
)
REDIS_MAX_MEMORY = Gauge(
    "proxyfleet_redis_maxmemory_bytes",
    "Redis's maxmemory (0: no limit set), read with the outbox's backlog.",
)


@dataclass(frozen=True, slots=True)
class RelaySettings:
    batch: int = 256
    """Most entries published before waiting for their acks."""
    idle: float = 0.05
    """Seconds a relay that found nothing waits before reading again (the latency of an
    event on an idle system; a busy relay never waits)."""
    linger: float = 0.01
    """Seconds a relay that published less than a full batch waits before reading again:
    under load it publishes fewer, bigger batches (each costs a read and an ack in Redis and
    a JetStream round trip), for at most this much more latency per event."""
    ack_timeout: float = 5.0
    """Seconds to wait for JetStream's ack of a batch before publishing it again."""
    claim_idle: float = 30.0
    """Seconds an entry stays unacked on another relay before this one claims it."""
    claim_every: float = 5.0
    """Seconds between looks for entries left by dead relays."""
    drain: float = 2.0
    """Seconds a stopping relay spends publishing what is left."""
    attempts: int = 5
    """Publishes of one batch before it is left for later (counted as failed)."""
    retry_timeout: float = 30.0
    """Longest time spent retrying one batch."""
    backlog_every: float = 1.0
    """Seconds between refreshes of the outbox length and age metrics."""
    pending_warn_every: float = 10.0
    """Seconds between `relay.publish_pending` warnings while NATS stays away."""


class _Disconnected(Exception):
    """NATS is not connected: wait for the reconnect rather than buffer (not retried)."""


class OutboxRelay:
    def __init__(
        self,
        outbox: Outbox,
        nc: NatsClient,
        *,
        service: str,
        settings: RelaySettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._outbox = outbox
        self._nc = nc
        self._settings = settings or RelaySettings()
        self._batches = Batches(nc, self._settings.ack_timeout)
        self._clock = clock or SystemClock()
        self._next_backlog = 0.0
        self._next_warning = 0.0
        self._waiting = False
        self.consumer = replica_name(service)
        self._store_ok = False
        self._next_claim = 0.0
        self._claim_from = "0-0"
        self._unacked: list[OutboxEntry] = []
        self.relayed = 0
        """Entries this relay published and acked."""

    async def ready(self) -> bool:
        """The last outbox read reached Redis and NATS is connected."""
        return self._store_ok and self._nc.is_connected

    async def backlog(self) -> Backlog:
        """The outbox's length and its oldest entry's age (also set as the metrics)."""
        backlog = await self._outbox.backlog(self._clock.now())
        OUTBOX_LENGTH.set(backlog.length)
        OUTBOX_OLDEST_AGE.set(backlog.oldest_age)
        REDIS_USED_MEMORY.set(backlog.used_memory)
        REDIS_MAX_MEMORY.set(backlog.max_memory)
        return backlog

    async def run(self, stop: asyncio.Event) -> None:
        """Relay until `stop` is set, then publish what is left (within `drain` seconds:
        what a stopping service wrote last goes out with it)."""
        await self._relay_until(stop)
        await self._drain()  # not when cancelled: whoever cancels wants it to end now

    async def _drain(self) -> None:
        with contextlib.suppress(
            StoreUnavailable, MessagingUnavailable, _Disconnected, TimeoutError
        ):
            async with asyncio.timeout(self._settings.drain):
                while await self.relay_once():
                    pass

    async def _relay_until(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self._refresh_backlog()
                if not self._nc.is_connected:
                    await self._pending("nats_disconnected")
                    await _wait(stop, self._settings.idle)
                    continue
                if self._waiting:
                    self._waiting = False
                    log.info("relay.publish_resumed", pending=len(self._unacked))
                relayed = await self.relay_once()
                if not relayed:
                    await _wait(stop, self._settings.idle)
                elif relayed < self._settings.batch and self._settings.linger:
                    await _wait(stop, self._settings.linger)
            except StoreUnavailable as exc:
                if self._store_ok:
                    log.warning("relay.outbox_unavailable", error=str(exc))
                self._store_ok = False
                await _wait(stop, 1.0)
            except _Disconnected:
                continue  # the next turn waits for the reconnect
            except MessagingUnavailable as exc:
                RELAY_FAILURES.inc(len(self._unacked))
                await self._pending("publish_failed", error=str(exc))
                await _wait(stop, 1.0)

    async def _refresh_backlog(self) -> None:
        now = asyncio.get_running_loop().time()
        if now >= self._next_backlog:
            self._next_backlog = now + self._settings.backlog_every
            await self.backlog()

    async def _pending(self, reason: str, **fields: str) -> None:
        """Say what waits in the outbox (at most every `pending_warn_every` seconds)."""
        now = asyncio.get_running_loop().time()
        if self._waiting and now < self._next_warning:
            return
        self._waiting = True
        self._next_warning = now + self._settings.pending_warn_every
        backlog = await self.backlog()
        log.warning(
            "relay.publish_pending",
            reason=reason,
            pending=backlog.length,
            oldest_age_s=round(backlog.oldest_age, 1),
            **fields,
        )

    async def relay_once(self) -> int:
        """Publish one batch (a failed one again, else claimed or new entries); returns
        how many entries were published and acked."""
        if not self._unacked:
            self._unacked = await self._take()
        entries = self._unacked
        if not entries:
            return 0
        async for attempt in stamina.retry_context(
            on=MessagingUnavailable,
            attempts=self._settings.attempts,
            timeout=self._settings.retry_timeout,
        ):
            with attempt:
                if not self._nc.is_connected:
                    raise _Disconnected  # into the reconnect buffer, it could be dropped
                if attempt.num > 1:
                    RETRIES.labels(op="relay.publish").inc()
                await self._publish(entries)
        OUTBOX_LENGTH.set(await self._outbox.ack([e.entry_id for e in entries]))
        self._unacked = []
        self.relayed += len(entries)
        RELAYED.inc(len(entries))
        return len(entries)

    async def _take(self) -> list[OutboxEntry]:
        s = self._settings
        if not self._store_ok:
            await self._outbox.ensure_group()
        now = asyncio.get_running_loop().time()
        if now >= self._next_claim:
            claimed, self._claim_from = await self._outbox.claim(
                self.consumer, s.claim_idle, s.batch, self._claim_from
            )
            if self._claim_from == "0-0":
                self._next_claim = now + s.claim_every
            self._store_ok = True
            if claimed:
                log.info("relay.entries_claimed", entries=len(claimed))
                return claimed
        entries = await self._outbox.read(self.consumer, s.batch)
        self._store_ok = True
        return entries

    async def _publish(self, entries: list[OutboxEntry]) -> None:
        """Publish every entry, each stream's share in order (an atomic batch on a replicated
        stream), the two streams at once."""
        streams: dict[bool, list[OutboxEntry]] = {}
        for e in entries:
            streams.setdefault(e.subject.startswith(subjects.INTENT_PREFIX), []).append(e)
        with messaging_outage("JetStream"):  # a NATS error in either is an outage
            done = await asyncio.gather(
                *(
                    self._batches.publish(
                        subjects.INTENT_STREAM if intents else subjects.EVENT_STREAM, share
                    )
                    for intents, share in streams.items()
                ),
                return_exceptions=True,
            )
            for outcome in done:
                if isinstance(outcome, BaseException):
                    raise outcome


async def _wait(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
