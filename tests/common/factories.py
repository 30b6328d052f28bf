"""Builders shared by the store tests."""

from __future__ import annotations

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire.events import Event
from proxyfleet.common.wire.models import Phase, Proxy


def make_proxy(pid: str, clock: ManualClock, **kw: object) -> Proxy:
    fields: dict[str, object] = {
        "id": pid,
        "provider": "local",
        "zone": "zone-a",
        "phase": Phase.PENDING,
        "gen": 0,
        "username": "u",
        "password": "secret",
        "created_at": clock.now(),
        "updated_at": clock.now(),
    }
    fields.update(kw)
    return Proxy(**fields)  # type: ignore[arg-type]


async def make_ready(registry: ProxyRegistry, proxy: Proxy) -> None:
    assert await registry.create(proxy)
    await registry.transition(proxy.id, Phase.PROVISIONING)
    await registry.transition(proxy.id, Phase.BOOTING, host="127.0.0.1", port=3128)
    await registry.transition(proxy.id, Phase.READY, last_ok_at=proxy.created_at)


async def outbox_events(redis_client: aioredis.Redis) -> list[Event]:
    """The events waiting in the outbox, oldest first."""
    entries = await Outbox(redis_client).peek()
    return [
        event_decoder.decode(e.body) for e in entries if e.subject.startswith("proxyfleet.events.")
    ]
