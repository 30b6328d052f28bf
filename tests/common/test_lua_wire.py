"""What the Lua scripts write to the outbox is the wire models exactly: every event a
`events.Event` and every intent a `models.Intent`, strictly decoded with no field the
models lack, on the subjects subjects.py names."""

from __future__ import annotations

import msgspec
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.domain.pool_spec import POOL_LABEL, Owner, PoolSpec
from proxyfleet.common.store import Fence, GrantRequest, LeaseStore, PoolStore, ProxyRegistry
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import Event, EventData, EventType
from proxyfleet.common.wire.models import (
    CreateIntent,
    DeleteIntent,
    Intent,
    LeaseOutcome,
    Phase,
    Withheld,
)


def _names(struct: type[msgspec.Struct]) -> set[str]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    tag = {info.tag_field} if info.tag_field else set()
    return {f.encode_name for f in info.fields} | tag


def _strict_event(body: bytes) -> Event:
    raw = msgspec.json.decode(body)
    assert set(raw) <= _names(Event), body
    assert set(raw["data"]) <= _names(EventData), body
    return msgspec.json.decode(body, type=Event, strict=True)


def _strict_intent(body: bytes) -> CreateIntent | DeleteIntent:
    intent: CreateIntent | DeleteIntent = msgspec.json.decode(body, type=Intent, strict=True)
    assert set(msgspec.json.decode(body)) <= _names(type(intent)), body
    return intent


async def _every_script_announces(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    pools, egress = PoolStore(redis_client, clock), EgressStore(redis_client, clock)
    unfenced = Fence("", "")
    await pools.apply("eu", PoolSpec(provider="local", size=2), Owner.API)
    record = await pools.get("eu")
    assert record is not None
    await pools.scale("eu", 3, "grants refused", record.gen, unfenced)
    await pools.announce(
        "eu", EventType.POOL_CONDITION, EventData(condition="Ready", status=True), unfenced
    )
    await make_ready(registry, make_proxy("p1", clock, pool="eu", labels={POOL_LABEL: "eu"}))
    await make_ready(registry, make_proxy("p2", clock))
    await egress.confirm("p1", "127.0.0.5")
    await egress.confirm("p2", "127.0.0.5")  # shared
    first = await leases.grant(GrantRequest(ttl=60, proxy_id="p1", client="c"))
    await leases.renew(first.id, first.epoch, 60, owner="c", actor="c")
    await leases.report(first.id, first.epoch, LeaseOutcome.BLOCKED, "example.com")
    await leases.release(first.id, first.epoch)
    clock.advance(leases.policy.cooldown)
    await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    await egress.confirm("p1", "127.0.0.6")  # changed: the lease is revoked
    await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    clock.advance(61)
    await leases.expire_due()
    await pools.withhold("p2", Withheld.QUARANTINED, "inspect")
    await pools.withhold("p2", Withheld.NO)
    await pools.withhold("p1", Withheld.DRAINING, "recycled")
    await registry.transition("p2", Phase.FAILED, reason="vanished")
    await registry.transition("p1", Phase.DELETING, delete_reason="drained")
    await registry.transition("p1", Phase.DELETED)
    await registry.adopt(make_proxy("p3", clock, phase=Phase.PROVISIONING, pool="eu"))
    await pools.delete("eu", Owner.API)
    await pools.remove_if_empty("eu", unfenced)


async def test_every_event_and_intent_a_script_writes_is_its_wire_model_exactly(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await _every_script_announces(registry, leases, redis_client, clock)
    entries = await Outbox(redis_client).peek()
    types: set[EventType] = set()
    intents: list[tuple[str, str]] = []
    for entry in entries:
        if entry.subject.startswith(subjects.EVENT_PREFIX + "."):
            event = _strict_event(entry.body)
            assert entry.subject == subjects.event_subject(event.type)
            assert entry.msg_id == event.id
            types.add(event.type)
            continue
        intent = _strict_intent(entry.body)
        make = (
            subjects.intent_create if isinstance(intent, CreateIntent) else subjects.intent_delete
        )
        assert entry.subject == make("local")
        intents.append((type(intent).__name__, intent.proxy_id))
    # source.*: a static provider's syncer writes them itself (Outbox.append), no script.
    assert set(EventType) - types == {
        EventType.PROXY_UNHEALTHY, EventType.POOL_RECYCLING, EventType.POOL_DELETED,
        EventType.SOURCE_ENTRY_REJECTED, EventType.SOURCE_LOAD_FAILED,
    }  # fmt: skip
    assert intents == [
        ("CreateIntent", "p1"), ("CreateIntent", "p2"), ("DeleteIntent", "p2"),
        ("DeleteIntent", "p1"), ("CreateIntent", "p3"),
    ]  # fmt: skip


async def test_an_event_keeps_its_key_order_and_only_a_members_names_its_pool(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await registry.create(make_proxy("p1", clock, pool="eu"))
    await registry.create(make_proxy("p2", clock))
    entries = await Outbox(redis_client).peek()
    bodies = [msgspec.json.decode(e.body) for e in entries if e.subject.endswith(".proxy.pending")]
    assert [b.get("pool") for b in bodies] == ["eu", None]
    assert [b["schema_version"] for b in bodies] == [1, 1]
    # The outbox's bytes as before the envelope was generated: the same order of keys.
    envelope = ["type", "schema_version", "id", "time", "proxy_id", "provider", "lease_id"]
    assert [list(b) for b in bodies] == [[*envelope, "pool", "data"], [*envelope, "data"]]
