"""Following lease events on NATS: when a lease ends (released through the API, expired,
revoked) or its proxy is deleted, this replica closes that lease's open connections."""

from __future__ import annotations

import asyncio

import msgspec
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import EventType
from proxyfleet.gateway.tunnels import Tunnels

log = get_logger(__name__)

ENDS = frozenset({EventType.LEASE_RELEASED, EventType.LEASE_EXPIRED, EventType.LEASE_REVOKED})


class LeaseFollower:
    def __init__(self, nc: NatsClient, tunnels: Tunnels) -> None:
        self._nc = nc
        self._tunnels = tunnels

    async def run(self, stop: asyncio.Event) -> None:
        # Core subscriptions, not a JetStream consumer: only what happens from now on
        # matters, and every replica must see every event.
        # Only the events that end something: not the grants and renewals, two for every
        # connection through any gateway, which this replica would decode for nothing.
        kinds = [*sorted(ENDS), EventType.PROXY_DELETED]
        subs = [
            await self._nc.subscribe(subjects.event_subject(kind.value), cb=self._on_event)
            for kind in kinds
        ]
        await self._nc.flush()
        try:
            await stop.wait()
        finally:
            for sub in subs:
                await sub.unsubscribe()

    async def _on_event(self, msg: Msg) -> None:
        try:
            event = event_decoder.decode(msg.data)
        except msgspec.DecodeError:
            log.warning("gateway.bad_event", subject=msg.subject)
            return
        self.handle(event.type, event.lease_id, event.proxy_id)

    def handle(self, kind: EventType, lease_id: str, proxy_id: str) -> int:
        closed = 0
        if kind in ENDS and lease_id:
            closed = self._tunnels.close_lease(lease_id, kind.value)
        elif kind is EventType.PROXY_DELETED:
            closed = self._tunnels.close_proxy(proxy_id, kind.value)
        if closed:
            log.info("gateway.tunnels_closed", lease_id=lease_id, proxy_id=proxy_id,
                     event=kind.value, count=closed)  # fmt: skip
        return closed
