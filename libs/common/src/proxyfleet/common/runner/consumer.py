"""The JetStream side of the runner, as a FastStream pull subscriber: one durable consumer
per provider, shared by all replicas (each intent goes to one of them), explicit acks,
NAK with a delay per delivery, TERM for undecodable intents and `in_progress` heartbeats
while a slow provider call runs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Protocol

import msgspec
import nats.errors
import nats.js.errors
from faststream import AckPolicy
from faststream.nats import JStream, NatsBroker, PullSub
from faststream.nats.annotations import NatsMessage
from faststream.nats.message import NatsMessage as NatsMessageType
from nats.aio.client import Client as NatsClient
from nats.js.api import AckPolicy as JsAckPolicy
from nats.js.api import ConsumerConfig, DeliverPolicy
from prometheus_client import Gauge
from pydantic import WithJsonSchema

from proxyfleet.common.messaging.jetstream import intent_decoder
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import MESSAGE_SECONDS, MESSAGES
from proxyfleet.common.runner.backoff import redelivery_delay
from proxyfleet.common.runner.broker import ConnectedNatsBroker
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.runner.verdict import Delivery, Reply, Verdict
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import CreateIntent, Intent
from proxyfleet.common.wire.schema import json_schema

log = get_logger("proxyfleet.runner")

INTENTS_IN_PROGRESS = Gauge(
    "proxyfleet_intents_in_progress",
    "Intents this replica is handling now (each heartbeated until acked or NAKed).",
)

IntentBody = Annotated[bytes, WithJsonSchema(json_schema(Intent))]
"""An intent as it arrives: JSON bytes, decoded by msgspec in the handler (an undecodable
one is terminated, not retried); the AsyncAPI document shows the `Intent` schema."""

OnIntent = Callable[[IntentBody, NatsMessageType], Awaitable[None]]


class HandlesIntents(Protocol):
    """What the consumer hands each decoded intent to (`IntentHandler` in the runner)."""

    async def handle(self, intent: Intent, delivery: Delivery) -> Verdict: ...


def consumer_config(settings: RunnerSettings) -> ConsumerConfig:
    durable = subjects.provisioner_durable(settings.provider)
    return ConsumerConfig(
        name=durable,
        durable_name=durable,
        filter_subject=subjects.intents_of(settings.provider),
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=JsAckPolicy.EXPLICIT,
        ack_wait=settings.ack_wait,
        max_deliver=settings.max_deliver,
    )


async def _raw_body(msg: NatsMessageType) -> bytes:
    """The body as it came: msgspec decodes it, not FastStream's JSON decoder."""
    return msg.body


def subscribe_intents(broker: NatsBroker, settings: RunnerSettings, on_intent: OnIntent) -> None:
    """Declare the intent subscribers of `settings.provider` on `broker`: `concurrency`
    pull subscribers on the shared durable, each fetching one intent when it is free.

    Not one subscriber with `max_workers`: its worker pool fetches one more intent while
    every worker is busy and holds it, unheartbeaten, until one frees up; past ack_wait
    JetStream delivers it again, spending a delivery of the intent's budget.
    """
    durable = subjects.provisioner_durable(settings.provider)
    for worker in range(settings.concurrency):
        broker.subscriber(
            subjects.intents_of(settings.provider),
            stream=JStream(subjects.INTENT_STREAM, declare=False),
            durable=durable,
            config=consumer_config(settings),
            pull_sub=PullSub(batch_size=1, timeout=settings.fetch_timeout),
            ack_policy=AckPolicy.MANUAL,
            no_reply=True,  # an intent is never answered, whatever its headers say
            decoder=_raw_body,
            title=f"{subjects.intents_of(settings.provider)}:provisioner",
            description=(
                "Create and delete intents for one provider instance, handled by its "
                f"provisioner replicas through one shared durable pull consumer (`{durable}`). "
                "Acked when done, NAKed with a growing delay on a temporary error, "
                "terminated when undecodable."
            ),
            include_in_schema=worker == 0,
        )(on_intent)


class IntentConsumer:
    def __init__(
        self,
        nc: NatsClient,
        handler: HandlesIntents,
        settings: RunnerSettings,
        *,
        consumer_check_interval: float = 5.0,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._handler = handler
        self._settings = settings
        self._check_interval = consumer_check_interval
        self.running = False

    async def run(self, stop: asyncio.Event) -> None:
        """Handle intents until `stop` is set, then give in-flight ones shutdown_grace to
        finish; the rest are NAKed so another replica takes them at once."""
        s = self._settings
        # Create or update: a changed ack_wait or max_deliver applies to every replica.
        await self._js.add_consumer(subjects.INTENT_STREAM, config=consumer_config(s))
        broker = ConnectedNatsBroker(self._nc, graceful_timeout=s.shutdown_grace)
        subscribe_intents(broker, s, self._on_intent)
        await broker.start()
        self.running = True
        log.info("consumer.subscribed", provider=s.provider, durable=self._durable)
        try:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._check_interval)
                if not stop.is_set():
                    await self._recreate_if_missing()
        finally:
            self.running = False
            await broker.stop()

    @property
    def _durable(self) -> str:
        return subjects.provisioner_durable(self._settings.provider)

    async def _recreate_if_missing(self) -> None:
        """A deleted consumer is declared again: FastStream's pull loops keep asking (each
        gets "no responders" at once) and pick up intents as soon as it exists."""
        try:
            await self._js.consumer_info(subjects.INTENT_STREAM, self._durable)
        except nats.js.errors.NotFoundError:
            log.warning("consumer.redeclared", durable=self._durable)
            with contextlib.suppress(nats.errors.Error):
                await self._js.add_consumer(
                    subjects.INTENT_STREAM, config=consumer_config(self._settings)
                )
        except nats.errors.Error as exc:
            log.warning("consumer.check_failed", error=str(exc))

    async def _on_intent(self, body: IntentBody, msg: NatsMessage) -> None:
        delivery = Delivery(msg.raw_message.metadata.num_delivered, self._settings.max_deliver)
        try:
            intent = intent_decoder.decode(body)
        except msgspec.DecodeError as exc:
            log.error(  # noqa: TRY400
                "consumer.undecodable_intent_dropped",
                subject=msg.raw_message.subject,
                error=str(exc),
            )
            MESSAGES.labels("intent", "invalid").inc()
            await self._reply(msg, Verdict(Reply.TERM, "invalid"))
            return
        kind = "intent.create" if isinstance(intent, CreateIntent) else "intent.delete"
        started = time.perf_counter()
        INTENTS_IN_PROGRESS.inc()
        try:
            async with self._heartbeats(msg):
                verdict = await self._handler.handle(intent, delivery)
        except asyncio.CancelledError:
            # Stopping: hand the intent to another replica now rather than after ack_wait.
            with contextlib.suppress(nats.errors.Error):
                await msg.nack()
            MESSAGES.labels(kind, "interrupted").inc()
            raise
        except Exception:
            log.exception("consumer.handling_failed", kind=kind, proxy_id=intent.proxy_id)
            verdict = self._after_unexpected_error(delivery)
        finally:
            INTENTS_IN_PROGRESS.dec()
        MESSAGE_SECONDS.labels(kind).observe(time.perf_counter() - started)
        MESSAGES.labels(kind, verdict.result).inc()
        await self._reply(msg, verdict)

    def _after_unexpected_error(self, delivery: Delivery) -> Verdict:
        """A store or NATS error, or a bug: try again later; out of deliveries, the
        reconciler publishes the intent again if the proxy still needs it."""
        if delivery.last:
            return Verdict(Reply.TERM, "error")
        delay = redelivery_delay(self._settings, delivery.number)
        return Verdict.nak(delay, "error")

    async def _reply(self, msg: NatsMessageType, verdict: Verdict) -> None:
        try:
            if verdict.reply is Reply.ACK:
                await msg.ack()
            elif verdict.reply is Reply.NAK:
                await msg.nack(delay=verdict.delay)
            else:
                await msg.reject()
        except nats.errors.Error as exc:
            # The intent comes back after ack_wait; handlers are idempotent.
            log.warning("consumer.reply_failed", error=str(exc))

    @contextlib.asynccontextmanager
    async def _heartbeats(self, msg: NatsMessageType) -> AsyncIterator[None]:
        """Tell JetStream the intent is still being worked on, so it is not redelivered."""

        s = self._settings
        every = min(s.heartbeat_interval, s.ack_wait / 3)

        async def beat() -> None:
            while True:
                await asyncio.sleep(every)
                with contextlib.suppress(nats.errors.Error):
                    await msg.in_progress()

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
