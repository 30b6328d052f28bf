"""Lease and proxy events published off the request path, acked in batches.

A request appends its event to the current batch and answers at once. The batch goes out
after the request, in request order, from one task per event-loop turn: every event is a
JetStream message of its own (with its `Nats-Msg-Id`), and only the last one asks for an
ack. JetStream stores one connection's messages to a stream in order, so that ack stands
for the whole batch. A batch whose ack reports an error, or does not come within
`ack_timeout`, is published again whole (JetStream drops, by `Nats-Msg-Id`, the copies that
did land), up to `attempts` times; then each of its events is logged and counted as not
published. At most `max_pending` events wait for an ack; past that a request waits up to
`stall` seconds for room, then its event is counted as not published and the request still
succeeds (the registry write is the fact, docs/architecture.md decision 8).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from proxyfleet.api.metrics import PUBLISH_FAILURES
from proxyfleet.common import subjects
from proxyfleet.common.clock import Clock
from proxyfleet.common.logging import get_logger
from proxyfleet.common.metrics import RETRIES
from proxyfleet.common.models import Event
from proxyfleet.common.store.fastid import fast_id

log = get_logger(__name__)

FAILURES = (nats.errors.Error, TimeoutError, ConnectionError)
MAX_BATCH = 256
_encode = msgspec.json.Encoder().encode
_ERROR = b'"error"'

Message = tuple[str, bytes, dict[str, str]]
"""subject, payload, headers"""


@dataclass(slots=True)
class _Batch:
    messages: list[Message] = field(default_factory=list)
    attempt: int = 1


class EventSink:
    def __init__(
        self,
        nc: NatsClient,
        clock: Clock,
        *,
        ack_timeout: float = 5.0,
        attempts: int = 5,
        max_pending: int = 20_000,
        stall: float = 1.0,
    ) -> None:
        self._nc = nc
        self._clock = clock
        self._ack_timeout = ack_timeout
        self._attempts = attempts
        self._max_pending = max_pending
        self._stall = stall
        self._inbox = ""
        self._seq = 0
        self._next = _Batch()
        self._in_flight: dict[str, _Batch] = {}
        self._events_in_flight = 0
        self._waiting: deque[tuple[float, str]] = deque()
        self._room = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None

    async def event(
        self,
        event_type: str,
        proxy_id: str,
        *,
        lease_id: str = "",
        provider: str = "",
        data: dict[str, str | int | float | bool] | None = None,
    ) -> bool:
        """Queue the event for the next batch; False (logged, counted) when it cannot go."""
        event = Event(
            type=event_type,
            id=fast_id("e"),  # the format of ids.new_event_id
            time=self._clock.now(),
            proxy_id=proxy_id,
            lease_id=lease_id,
            provider=provider,
            data=data or {},
        )
        message = (subjects.event_subject(event_type), _encode(event), {"Nats-Msg-Id": event.id})
        try:
            if self._nc.is_closed:
                raise nats.errors.ConnectionClosedError
            if self._events_in_flight + len(self._next.messages) >= self._max_pending:
                await self._wait_for_room()
        except FAILURES as exc:
            self._lost([message], 1, exc)
            return False
        if not self._next.messages:
            self._spawn(self._flush())
        self._next.messages.append(message)
        return True

    async def _wait_for_room(self) -> None:
        deadline = time.monotonic() + self._stall
        while self._events_in_flight + len(self._next.messages) >= self._max_pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self._events_in_flight} events wait for an ack")
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), left)

    async def _flush(self) -> None:
        """Send the batch gathered during this loop turn (runs once per batch)."""
        await asyncio.sleep(0)  # let the turn's other requests add theirs
        batch, self._next = self._next, _Batch()
        for first in range(0, len(batch.messages), MAX_BATCH):
            await self._send(_Batch(batch.messages[first : first + MAX_BATCH]))

    async def _send(self, batch: _Batch) -> None:
        token = ""
        try:
            if not self._inbox:
                inbox = self._nc.new_inbox() + "."
                await self._nc.subscribe(inbox + "*", cb=self._on_ack)
                self._inbox = inbox
            self._seq += 1
            token = str(self._seq)
            self._in_flight[token] = batch  # before publishing: the ack may come during it
            self._events_in_flight += len(batch.messages)
            *body, (subject, payload, headers) = batch.messages
            for s, p, h in body:
                await self._nc.publish(s, p, headers=h)
            await self._nc.publish(subject, payload, self._inbox + token, headers)
        except FAILURES as exc:
            if token and self._in_flight.pop(token, None) is batch:
                self._events_in_flight -= len(batch.messages)
            self._lost(batch.messages, batch.attempt, exc)
            return
        self._waiting.append((time.monotonic() + self._ack_timeout, token))
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    def _done(self, token: str) -> _Batch | None:
        batch = self._in_flight.pop(token, None)
        if batch is not None:
            self._events_in_flight -= len(batch.messages)
            self._room.set()
        return batch

    async def _on_ack(self, msg: Msg) -> None:
        batch = self._done(msg.subject[len(self._inbox) :])
        # A PubAck is {"stream":..,"seq":..}; failures carry "error", or a 503 status
        # header (no stream takes the subject).
        if batch is not None and (
            _ERROR in msg.data or (msg.headers and msg.headers.get("Status") == "503")
        ):
            self._failed(batch, msg.data.decode(errors="replace") or "no responders")

    def _failed(self, batch: _Batch, error: object) -> None:
        if batch.attempt >= self._attempts:
            self._lost(batch.messages, batch.attempt, error)
            return
        batch.attempt += 1
        RETRIES.labels(op="publish.event").inc()
        self._spawn(self._retry(batch))

    async def _retry(self, batch: _Batch) -> None:
        await asyncio.sleep(min(0.1 * 2**batch.attempt, 2.0))
        await self._send(batch)

    async def _reap(self) -> None:
        """Retry the batches whose ack is late (acked ones are skipped as they come up)."""
        while True:
            await asyncio.sleep(min(0.25, self._ack_timeout))
            now = time.monotonic()
            while self._waiting and (
                self._waiting[0][0] <= now or self._waiting[0][1] not in self._in_flight
            ):
                _, token = self._waiting.popleft()
                batch = self._done(token)
                if batch is not None:
                    self._failed(batch, "no ack in time")

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _lost(self, messages: list[Message], attempts: int, error: object) -> None:
        PUBLISH_FAILURES.labels("event").inc(len(messages))
        for subject, _, headers in messages:
            log.warning(
                "event_not_published",
                event_type=subject.removeprefix(subjects.EVENT_PREFIX + "."),
                event_id=headers["Nats-Msg-Id"],
                attempts=attempts,
                error=repr(error),
            )

    @property
    def pending(self) -> int:
        """Events queued, waiting for their batch's ack, or for a retry."""
        return len(self._next.messages) + self._events_in_flight + len(self._tasks)

    async def drain(self, within: float = 5.0) -> None:
        """Wait (bounded) for the acks still out, then stop the background work."""
        deadline = time.monotonic() + within
        while self.pending > 0 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for task in [*self._tasks, *([self._reaper] if self._reaper else [])]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
