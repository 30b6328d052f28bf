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

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import MessagingUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import RETRIES
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import Event
from proxyfleet.common.wire.models import CreateIntent, DeleteIntent, Intent

log = get_logger("proxyfleet.messaging")
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
    # JetStream's publish turns "no responders" into this: the stream has no leader now
    # (an election after its leader died, or no quorum). It killed the provisioner's
    # reconciler on a 3-node cluster (the fault suite's "nats node kill (cluster)").
    nats.js.errors.NoStreamResponseError,
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
TRANSIENT_API_ERRORS = frozenset({10158})
"""JetStream API errors that clear by themselves: 10158, "duplicate message id is in
process" (an earlier attempt with the same id is still being stored, as when a stream
regains its quorum; seen in the fault suite's "nats no quorum (cluster)")."""
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
    except nats.js.errors.APIError as exc:
        if exc.err_code not in TRANSIENT_API_ERRORS:
            raise
        raise MessagingUnavailable(f"{what} unavailable: {exc.description}", RETRY_AFTER) from exc


CONNECT_TRIES = 1
"""Extra TCP tries (0.5 s apart) of one connect before it gives up: the caller's backoff
(`proxyfleet.common.host.connect`) decides when to try again, and says so once."""


async def connect_nats(url: str, name: str) -> NatsClient:
    """One attempt (MessagingUnavailable when NATS cannot be reached); once connected,
    endless reconnects: NATS going away delays work, never ends a service."""
    nc = NatsClient()

    async def on_error(exc: Exception) -> None:
        # nats-py reports every failed (re)connect here, with a traceback by default: the
        # connect caller and the disconnect/reconnect callbacks already say what matters.
        if not isinstance(exc, OSError | TimeoutError | nats.errors.Error):
            log.warning("messaging.nats_error", name=name, error=repr(exc))

    async def on_disconnect() -> None:
        if not nc.is_closed:
            log.warning("messaging.nats_disconnected", name=name)

    async def on_reconnect() -> None:
        log.info("messaging.nats_reconnected", name=name)

    # Several servers, comma-separated: the seeds of a cluster, tried in turn at connect
    # (the client learns the others from whichever answers).
    servers = [u.strip() for u in url.split(",") if u.strip()]
    try:
        await nc.connect(
            servers,
            name=name,
            max_reconnect_attempts=CONNECT_TRIES,
            reconnect_time_wait=0.5,  # type: ignore[arg-type]  # annotated int, used as float
            connect_timeout=5,
            error_cb=on_error,
            disconnected_cb=on_disconnect,
            reconnected_cb=on_reconnect,
        )
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        await nc.close()
        detail = str(exc) or type(exc).__name__
        raise MessagingUnavailable(f"NATS at {url} unavailable: {detail}", RETRY_AFTER) from exc
    # The client reads this option on every reconnect (nats-py keeps no copy): from now on
    # it never gives up.
    nc.options["max_reconnect_attempts"] = -1
    return nc


async def ensure_streams(js: JetStreamContext, replicas: int = 1) -> None:
    """Declare both streams (idempotent; every service may call it at start). `replicas`:
    copies of each stream in a NATS cluster (3 in deploy/kubernetes-ha); an existing
    stream is updated to it (JetStream scales a stream's replicas in place)."""
    configs = [
        StreamConfig(
            name=subjects.INTENT_STREAM,
            subjects=[f"{subjects.INTENT_PREFIX}.>"],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            duplicate_window=120,
            num_replicas=replicas,
            allow_atomic=True,  # the relay's batches (messaging/atomic.py)
        ),
        StreamConfig(
            name=subjects.EVENT_STREAM,
            subjects=[f"{subjects.EVENT_PREFIX}.>"],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=EVENT_RETENTION_SECONDS,
            discard=DiscardPolicy.OLD,
            num_replicas=replicas,
            allow_atomic=True,
        ),
    ]
    for cfg in configs:
        try:
            await js.add_stream(cfg)
        except BadRequestError:
            await js.update_stream(cfg)


class Publisher:
    """Publishes intents outside a state change (deduplicated by message id). Events, and
    intents a state change implies, go through the store's outbox and its relay.

    Every caller is level-triggered (the reconciler, gc and the API's repeated delete ask
    again later), so while NATS is disconnected a publish never goes into the client's
    reconnect buffer (shared with the relay; a full one drops messages,
    OutboundBufferLimitError): each attempt fails at once, and after `attempts` of them
    (stamina's backoff, about a second and a half for 5) MessagingUnavailable is raised."""

    def __init__(self, nc: NatsClient, clock: Clock, *, attempts: int = 5) -> None:
        """`attempts`: publishes of one message before MessagingUnavailable (1 on a
        request path, where the client retries)."""
        self._nc = nc
        self._js = nc.jetstream()
        self._clock = clock
        self._attempts = attempts

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
            on=MessagingUnavailable, attempts=self._attempts, timeout=30.0
        ):
            with attempt:
                if attempt.num > 1:
                    RETRIES.labels(op=op).inc()
                if not self._nc.is_connected:
                    raise MessagingUnavailable("NATS disconnected: not buffered", RETRY_AFTER)
                with messaging_outage("JetStream"):
                    await self._js.publish(subject, payload, headers=headers)
