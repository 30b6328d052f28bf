"""The JetStream side of the runner: one durable pull consumer per provider, shared by all
replicas (each intent goes to one of them), explicit acks, NAK with delay for retries and
`in_progress` heartbeats while a slow provider call runs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import msgspec
import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from proxyfleet.common import subjects
from proxyfleet.common.logging import get_logger
from proxyfleet.common.messaging import intent_decoder
from proxyfleet.common.metrics import MESSAGE_SECONDS, MESSAGES
from proxyfleet.common.models import CreateIntent
from proxyfleet.common.runner.backoff import redelivery_delay
from proxyfleet.common.runner.handlers import IntentHandler
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.runner.verdict import Delivery, Reply, Verdict

log = get_logger("proxyfleet.runner")


def consumer_config(settings: RunnerSettings) -> ConsumerConfig:
    durable = subjects.provisioner_durable(settings.provider)
    return ConsumerConfig(
        name=durable,
        durable_name=durable,
        filter_subject=subjects.intents_of(settings.provider),
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=settings.ack_wait,
        max_deliver=settings.max_deliver,
    )


class IntentConsumer:
    def __init__(
        self, js: JetStreamContext, handler: IntentHandler, settings: RunnerSettings
    ) -> None:
        self._js = js
        self._handler = handler
        self._settings = settings
        self.running = False

    async def run(self, stop: asyncio.Event) -> None:
        """Fetch and handle intents until `stop` is set, then let in-flight ones finish."""
        s = self._settings
        # Create or update: a changed ack_wait or max_deliver applies to every replica.
        await self._js.add_consumer(subjects.INTENT_STREAM, config=consumer_config(s))
        durable = subjects.provisioner_durable(s.provider)
        sub = await self._js.pull_subscribe_bind(durable=durable, stream=subjects.INTENT_STREAM)
        inflight: set[asyncio.Task[None]] = set()
        self.running = True
        log.info("consuming intents", provider=s.provider, durable=durable)
        try:
            while not stop.is_set():
                free = s.concurrency - len(inflight)
                if free <= 0:
                    await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                try:
                    msgs = await sub.fetch(free, timeout=s.fetch_timeout)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                except nats.errors.Error as exc:
                    log.warning("fetching intents failed", error=str(exc))
                    await asyncio.sleep(s.fetch_timeout)
                    continue
                for msg in msgs:
                    task = asyncio.create_task(self._handle(msg))
                    inflight.add(task)
                    task.add_done_callback(inflight.discard)
        finally:
            self.running = False
            await self._drain(inflight)
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def _drain(self, inflight: set[asyncio.Task[None]]) -> None:
        if not inflight:
            return
        _, late = await asyncio.wait(set(inflight), timeout=self._settings.shutdown_grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def _handle(self, msg: Msg) -> None:
        delivery = Delivery(msg.metadata.num_delivered, self._settings.max_deliver)
        try:
            intent = intent_decoder.decode(msg.data)
        except msgspec.DecodeError as exc:
            log.error(  # noqa: TRY400
                "undecodable intent dropped", subject=msg.subject, error=str(exc)
            )
            MESSAGES.labels("intent", "invalid").inc()
            await msg.term()
            return
        kind = "intent.create" if isinstance(intent, CreateIntent) else "intent.delete"
        started = time.perf_counter()
        try:
            async with self._heartbeats(msg):
                verdict = await self._handler.handle(intent, delivery)
        except asyncio.CancelledError:
            # Stopping: hand the intent to another replica now rather than after ack_wait.
            with contextlib.suppress(nats.errors.Error):
                await msg.nak()
            MESSAGES.labels(kind, "interrupted").inc()
            raise
        except Exception:
            log.exception("intent handling failed", kind=kind, proxy_id=intent.proxy_id)
            verdict = self._after_unexpected_error(delivery)
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

    async def _reply(self, msg: Msg, verdict: Verdict) -> None:
        try:
            if verdict.reply is Reply.ACK:
                await msg.ack()
            elif verdict.reply is Reply.NAK:
                await msg.nak(delay=verdict.delay)
            else:
                await msg.term()
        except nats.errors.Error as exc:
            # The intent comes back after ack_wait; handlers are idempotent.
            log.warning("replying to an intent failed", error=str(exc))

    @contextlib.asynccontextmanager
    async def _heartbeats(self, msg: Msg) -> AsyncIterator[None]:
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
