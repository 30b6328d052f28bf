"""Publishing after a committed registry write.

The registry write is the fact; the message tells the others. Events leave without
holding up the request (proxyfleet.api.eventsink); intents are rare and wait for their
ack. If NATS cannot take the
message, the write still stands and the caller still gets its answer: level-triggered
reconcilers find the work from Redis, so a lost message delays work but never loses it.
Each failure is logged and counted (proxyfleet_api_publish_failures_total).
"""

from __future__ import annotations

import asyncio

import nats.errors

from proxyfleet.api.eventsink import EventSink
from proxyfleet.api.metrics import PUBLISH_FAILURES
from proxyfleet.common.logging import get_logger
from proxyfleet.common.messaging import Publisher
from proxyfleet.common.models import CreateIntent, DeleteIntent

log = get_logger(__name__)

_FAILURES = (nats.errors.Error, asyncio.TimeoutError, ConnectionError)


class Messages:
    """Publisher calls that never fail the request that made them. Events go through the
    EventSink (acked in the background); intents wait for their ack."""

    def __init__(self, publisher: Publisher, events: EventSink) -> None:
        self._publisher = publisher
        self._events = events

    async def event(
        self,
        event_type: str,
        proxy_id: str,
        *,
        lease_id: str = "",
        provider: str = "",
        data: dict[str, str | int | float | bool] | None = None,
    ) -> bool:
        return await self._events.event(
            event_type, proxy_id, lease_id=lease_id, provider=provider, data=data
        )

    async def create(self, provider: str, proxy_id: str) -> bool:
        return await self._intent(provider, CreateIntent(proxy_id=proxy_id), f"{proxy_id}:create")

    async def delete(self, provider: str, proxy_id: str, gen: int, reason: str = "") -> bool:
        intent = DeleteIntent(proxy_id=proxy_id, reason=reason)
        return await self._intent(provider, intent, f"{proxy_id}:delete:{gen}")

    async def _intent(
        self, provider: str, intent: CreateIntent | DeleteIntent, dedupe_key: str
    ) -> bool:
        try:
            await self._publisher.intent(provider, intent, dedupe_key=dedupe_key)
        except _FAILURES as exc:
            PUBLISH_FAILURES.labels("intent").inc()
            log.warning(
                "intent_not_published",
                intent=type(intent).__name__,
                proxy_id=intent.proxy_id,
                error=repr(exc),
            )
            return False
        return True
