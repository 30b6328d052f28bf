"""A transition (or update) that changes a proxy's zone moves it between the per-zone
availability sets in the same script, and a transition's event names both zones."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire.events import Event, EventData, EventType
from proxyfleet.common.wire.models import Phase


async def _events(redis_client: aioredis.Redis, proxy_id: str) -> list[Event]:
    decoded = [
        event_decoder.decode(e.body)
        for e in await Outbox(redis_client).peek()
        if e.subject.startswith("proxyfleet.events.")
    ]
    return [e for e in decoded if e.proxy_id == proxy_id]


async def test_a_booting_transition_with_another_zone_moves_the_proxy_and_says_so(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.create(make_proxy("p1", clock, zone="z1"))
    await registry.transition("p1", Phase.PROVISIONING)
    res = await registry.transition("p1", Phase.BOOTING, host="h", port=7, zone="z2")
    booting = (await _events(redis_client, "p1"))[-1]
    assert booting.type is EventType.PROXY_BOOTING
    assert booting.data == EventData(from_="provisioning", gen=res.gen, zone="z2", from_zone="z1")
    await registry.transition("p1", Phase.READY)
    proxy = await registry.get("p1")
    assert proxy is not None
    assert proxy.zone == "z2"
    assert await redis_client.zrange("pf:avail:local:z1", 0, -1) == []
    assert await redis_client.zrange("pf:avail:local:z2", 0, -1) == ["p1"]
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=5, provider="local", zone="z1"))
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=5, zone="z1"))  # any provider: read from the hash
    assert (await leases.grant(GrantRequest(ttl=5, provider="local", zone="z2"))).proxy_id == "p1"


async def test_a_transition_in_the_same_zone_names_no_zone(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.create(make_proxy("p1", clock, zone="z1"))
    await registry.transition("p1", Phase.PROVISIONING)
    res = await registry.transition("p1", Phase.BOOTING, host="h", port=7, zone="z1")
    booting = (await _events(redis_client, "p1"))[-1]
    assert booting.data == EventData(from_="provisioning", gen=res.gen)


async def test_a_grantable_proxy_changing_zone_keeps_its_place_in_the_queue(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock, zone="z1"))
    score = await redis_client.zscore("pf:avail:local:z1", "p1")
    assert score is not None
    await registry.update("p1", zone="z2")
    assert await redis_client.zscore("pf:avail:local:z1", "p1") is None
    assert await redis_client.zscore("pf:avail:local:z2", "p1") == score
    assert await redis_client.zscore("pf:avail:local", "p1") == score
    assert await redis_client.zscore("pf:avail", "p1") == score
