"""A store reset never destroys the fleet: after FLUSHDB the provisioner registers every
local proxy again from its folder (id, credentials, address, labels), within one reconcile
interval, and GC deletes nothing. Real NATS, Redis and proxy processes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.gc.collector import Collector
from proxyfleet.gc.settings import GcSettings
from proxyfleet.provisioner_local.adapter import LocalProvider

from .conftest import RunnerFactory
from .helpers import (
    INSTALLATION,
    EventLog,
    add_pending_proxy,
    connect_status,
    fast_settings,
    wait_for_phase,
    wait_until,
)

RECONCILE = 1.0


async def test_a_flushed_registry_is_rebuilt_from_the_proxies_and_gc_deletes_nothing(
    provider_name: str,
    nc: NatsClient,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    event_log: EventLog,
    start_runner: RunnerFactory,
    make_local_provider: Callable[..., LocalProvider],
) -> None:
    settings = fast_settings(provider_name, reconcile_interval=RECONCILE)
    runner = await start_runner(make_local_provider(), settings)
    made = [
        await add_pending_proxy(registry, provider_name, labels={"tier": str(i)}) for i in range(3)
    ]
    before = {p.id: await wait_for_phase(registry, p.id, Phase.BOOTING) for p in made}
    old_marker = await registry.installation.marker()
    assert old_marker is not None

    await redis_client.flushdb()  # Redis restarted without persistence
    # Bounded by a pass of the adopter plus slack for a busy machine; not a timing target.
    for p in made:
        await wait_for_phase(registry, p.id, Phase.BOOTING, within=RECONCILE + 10)

    marker = await registry.installation.marker()
    assert marker is not None
    assert marker.installation_id == INSTALLATION
    assert marker.created_at > old_marker.created_at
    for p in made:
        back = await registry.get(p.id)
        assert back is not None
        was = before[p.id]
        assert (back.host, back.port, back.resource_id) == (was.host, was.port, was.resource_id)
        assert (back.username, back.password, back.labels) == (p.username, p.password, p.labels)
        assert back.zone == p.zone
        assert await asyncio.to_thread(connect_status, back.port, "example.com:443") == 407
    await wait_until(
        lambda: _adopted(event_log, [p.id for p in made]), 10, "the proxy.adopted events"
    )
    assert await runner.adopter.adopt_once() == 0  # nothing left to adopt
    # ...and the provider is marked listed under the new marker (pools create again).
    assert await registry.installation.listed([provider_name]) == {provider_name: True}

    gc = Collector(
        nc=nc,
        registry=registry,
        publisher=Publisher(nc, SystemClock()),
        providers=[provider_name],
        installation_id=INSTALLATION,
        settings=GcSettings(min_age=0.0, max_delete_share=1.0, request_timeout=5.0),
        clock=SystemClock(),
    )
    report = await gc.run_once()
    assert report.result == "ok"
    assert report.deletions == []
    assert report.providers[0].listed == len(made)


async def _adopted(log: EventLog, ids: list[str]) -> bool:
    return all("proxy.adopted" in log.types_of(pid) for pid in ids)
