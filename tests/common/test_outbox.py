"""The store's scripts write their events and intents to the outbox in the same step."""

from __future__ import annotations

from typing import Any

import msgspec
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.messaging.jetstream import event_decoder, intent_decoder
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire.events import Event, EventData, EventType
from proxyfleet.common.wire.models import CreateIntent, DeleteIntent, LeaseOutcome, Phase


async def _outbox(redis_client: aioredis.Redis) -> list[dict[str, Any]]:
    """Each entry as a relay publishes it: s (subject), i (Nats-Msg-Id), d (body)."""
    entries = await Outbox(redis_client).peek()
    return [{"s": e.subject, "i": e.msg_id, "d": e.body.decode()} for e in entries]


async def _events(redis_client: aioredis.Redis) -> list[Event]:
    return [
        event_decoder.decode(f["d"])
        for f in await _outbox(redis_client)
        if f["s"].startswith("proxyfleet.events.")
    ]


async def test_a_new_pending_proxy_queues_its_event_and_create_intent(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.create(make_proxy("p1", clock))
    event_entry, intent_entry = await _outbox(redis_client)
    assert event_entry["s"] == "proxyfleet.events.proxy.pending"
    event = event_decoder.decode(event_entry["d"])
    assert event_entry["i"] == event.id
    assert (event.type, event.proxy_id, event.provider) == (EventType.PROXY_PENDING, "p1", "local")
    assert event.time == clock.now()
    assert event.data == EventData(from_="", gen=0)
    assert intent_entry["s"] == "proxyfleet.intents.local.create"
    assert intent_entry["i"] == "p1:create"
    assert intent_decoder.decode(intent_entry["d"]) == CreateIntent(proxy_id="p1")


async def test_a_proxy_stored_in_another_phase_is_not_announced(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.create(make_proxy("p1", clock, phase=Phase.BOOTING))
    assert await _outbox(redis_client) == []


async def test_a_transition_queues_its_event_and_a_failure_its_delete_intent(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.create(make_proxy("p1", clock))
    await registry.transition("p1", Phase.PROVISIONING)
    await registry.update("p1", host="127.0.0.1")  # a field update announces nothing
    await registry.transition("p1", Phase.FAILED, reason='quota "CPUS" exceeded')
    entries = (await _outbox(redis_client))[2:]
    assert [e["s"] for e in entries] == [
        "proxyfleet.events.proxy.provisioning",
        "proxyfleet.events.proxy.failed",
        "proxyfleet.intents.local.delete",
    ]
    provisioning, failed = (event_decoder.decode(e["d"]) for e in entries[:2])
    assert provisioning.data == EventData(from_="pending", gen=1)
    assert failed.data == EventData(from_="provisioning", gen=2, reason='quota "CPUS" exceeded')
    assert entries[2]["i"] == "p1:delete:2"
    intent = intent_decoder.decode(entries[2]["d"])
    assert intent == DeleteIntent(proxy_id="p1", reason='quota "CPUS" exceeded')


async def test_a_forced_delete_revokes_the_lease_and_queues_the_delete_intent(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60))
    await redis_client.delete("pf:outbox")
    moved = await registry.transition("p1", Phase.DELETING, delete_reason="deleted by admin")
    deleting, revoked, intent = await _outbox(redis_client)
    assert deleting["s"] == "proxyfleet.events.proxy.deleting"
    revoked_event = event_decoder.decode(revoked["d"])
    assert revoked_event.type is EventType.LEASE_REVOKED
    assert (revoked_event.lease_id, revoked_event.provider) == (lease.id, "local")
    assert revoked_event.data == EventData(reason="proxy deleted")
    assert revoked_event.id != event_decoder.decode(deleting["d"]).id
    assert intent["i"] == f"p1:delete:{moved.gen}"
    assert intent_decoder.decode(intent["d"]) == DeleteIntent(
        proxy_id="p1", reason="deleted by admin"
    )


async def test_every_lease_event_carries_its_provider(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await make_ready(registry, make_proxy("p2", clock))
    await redis_client.delete("pf:outbox")
    first = await leases.grant(GrantRequest(ttl=60, holder="h", target="t.example", client="c1"))
    await leases.renew(first.id, first.epoch, 120, owner="c1", actor="c1")
    await leases.report(first.id, first.epoch, LeaseOutcome.BLOCKED, actor="an-admin")
    await leases.release(first.id, first.epoch, actor="an-admin")
    second = await leases.grant(GrantRequest(ttl=5, client="c2"))
    clock.advance(10)
    await leases.expire_due()
    events = await _events(redis_client)
    assert [e.type.value for e in events] == [
        "lease.granted",
        "lease.renewed",
        "lease.reported",
        "lease.released",
        "lease.granted",
        "lease.expired",
    ]
    assert all(e.provider == "local" for e in events)
    assert [e.lease_id for e in events] == [first.id] * 4 + [second.id] * 2
    granted = events[0]
    assert granted.data == EventData(
        epoch=first.epoch,
        holder="h",
        target="t.example",
        expires_at=first.expires_at,
        client="c1",
        by="c1",
    )
    # `client`: the owner, on every lease event; `by`: who called, absent for an expiry
    assert [(e.data.client, e.data.by) for e in events[1:4]] == [
        ("c1", "c1"),
        ("c1", "an-admin"),
        ("c1", "an-admin"),
    ]
    assert events[2].data == EventData(
        epoch=first.epoch,
        outcome=LeaseOutcome.BLOCKED,
        target="t.example",
        client="c1",
        by="an-admin",
    )
    assert events[5].data == EventData(epoch=second.epoch, client="c2")


async def test_the_event_wire_shape_is_the_documented_envelope(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    assert await registry.create(make_proxy("p1", clock))
    [entry, _] = await _outbox(redis_client)
    raw = msgspec.json.decode(entry["d"])
    assert set(raw) == {
        "type",
        "schema_version",
        "id",
        "time",
        "proxy_id",
        "provider",
        "lease_id",
        "data",
    }
    assert raw["schema_version"] == 1
    assert raw["data"] == {"from": "", "gen": 0}
