"""NATS at the edge: connecting, declaring the streams, publishing intents and events.

NATS errors that mean "not now" (no ack in time, no responders, the client's buffer full
while it reconnects, the connection closed or draining) leave this module as
MessagingUnavailable, after bounded retries where a retry may help."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
import nats
import nats.errors
import stamina
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError

from proxyfleet.common import subjects
from proxyfleet.common.clock import Clock
from proxyfleet.common.errors import MessagingUnavailable
from proxyfleet.common.metrics import RETRIES
from proxyfleet.common.models import CreateIntent, DeleteIntent, Event, Intent

_encoder = msgspec.json.Encoder()
intent_decoder: msgspec.json.Decoder[Intent] = msgspec.json.Decoder(Intent)
event_decoder = msgspec.json.Decoder(Event)

EVENT_RETENTION_SECONDS = 7 * 86_400

# Errors after which a JetStream publish may succeed if repeated: no ack in time, the stream
# leader moving, the client's buffer full while it reconnects. The message id stays the same
# across attempts, so JetStream drops a copy that did land.
RETRYABLE_PUBLISH_ERRORS = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.OutboundBufferLimitError,
)
OUTAGES = (
    *RETRYABLE_PUBLISH_ERRORS,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
)
"""NATS errors that mean the broker cannot take or give a message now."""
RETRY_AFTER = 1.0
"""Seconds a caller is asked to wait after a messaging outage."""


@contextmanager
def messaging_outage(what: str = "NATS") -> Iterator[None]:
    """Raise MessagingUnavailable for a NATS outage inside the block."""
    try:
        yield
    except OUTAGES as exc:
        detail = str(exc) or type(exc).__name__
        raise MessagingUnavailable(f"{what} unavailable: {detail}", RETRY_AFTER) from exc


async def connect_nats(url: str, name: str) -> NatsClient:
    """Connect with endless reconnects: NATS going away delays work, never ends a service."""
    return await nats.connect(
        url, name=name, max_reconnect_attempts=-1, reconnect_time_wait=0.5, connect_timeout=5
    )


async def ensure_streams(js: JetStreamContext) -> None:
    """Declare both streams (idempotent; every service may call it at start)."""
    configs = [
        StreamConfig(
            name=subjects.INTENT_STREAM,
            subjects=[f"{subjects.INTENT_PREFIX}.>"],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            duplicate_window=120,
        ),
        StreamConfig(
            name=subjects.EVENT_STREAM,
            subjects=[f"{subjects.EVENT_PREFIX}.>"],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=EVENT_RETENTION_SECONDS,
            discard=DiscardPolicy.OLD,
        ),
    ]
    for cfg in configs:
        try:
            await js.add_stream(cfg)
        except BadRequestError:
            await js.update_stream(cfg)


class Publisher:
    """Publishes intents outside a state change (deduplicated by message id). Events, and
    intents a state change implies, go through the store's outbox and its relay."""

    def __init__(self, js: JetStreamContext, clock: Clock) -> None:
        self._js = js
        self._clock = clock

    async def intent(self, provider: str, intent: Intent, dedupe_key: str = "") -> None:
        if isinstance(intent, CreateIntent):
            subject = subjects.intent_create(provider)
        else:
            subject = subjects.intent_delete(provider)
        headers = {"Nats-Msg-Id": dedupe_key} if dedupe_key else None
        await self._publish(subject, _encoder.encode(intent), headers, "publish.intent")

    async def delete(
        self,
        provider: str,
        proxy_id: str,
        resource_id: str = "",
        reason: str = "",
        dedupe_key: str = "",
    ) -> None:
        await self.intent(
            provider,
            DeleteIntent(proxy_id=proxy_id, resource_id=resource_id, reason=reason),
            dedupe_key,
        )

    async def _publish(
        self, subject: str, payload: bytes, headers: dict[str, str] | None, op: str
    ) -> None:
        """Bounded retries on named outages only, counted; then MessagingUnavailable."""
        async for attempt in stamina.retry_context(
            on=MessagingUnavailable, attempts=5, timeout=30.0
        ):
            with attempt:
                if attempt.num > 1:
                    RETRIES.labels(op=op).inc()
                with messaging_outage("JetStream"):
                    await self._js.publish(subject, payload, headers=headers)
