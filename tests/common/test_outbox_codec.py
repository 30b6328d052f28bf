"""The outbox's compact event record: read back as the event the scripts' callers document,
through the real scripts (a record's bytes) and directly (the codec is pure)."""

from __future__ import annotations

import msgspec
import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.store.outbox_codec import (
    DATA_KEYS,
    EVENT_CODES,
    FIELD,
    RECORD_SEP,
    BadRecord,
    expand,
)
from proxyfleet.common.wire.events import EventData, EventType


def _record(*fields: str) -> str:
    return RECORD_SEP.join(fields)


def test_every_event_type_and_data_key_has_its_own_code() -> None:
    assert set(EVENT_CODES) == set(EventType)
    assert len(set(EVENT_CODES.values())) == len(EVENT_CODES)
    info = msgspec.inspect.type_info(EventData)
    assert isinstance(info, msgspec.inspect.StructType)
    assert sorted(DATA_KEYS) == sorted(f.encode_name for f in info.fields)


def test_a_record_reads_back_as_the_event_its_subject_and_id() -> None:
    code = str(EVENT_CODES[EventType.LEASE_RELEASED])
    epoch, up, client, by = (
        str(DATA_KEYS.index(k) + 1) for k in ("epoch", "bytes_up", "client", "by")
    )
    data = (epoch, "17", up, "512", client, '"team-a"', by, "", "custom", "[1]")
    record = _record(code, "e1", "1765000000.25", "p1", "local", "l1", "eu", *data)
    subject, msg_id, body = expand(record)
    assert (subject, msg_id) == ("proxyfleet.events.lease.released", "e1")
    event = event_decoder.decode(body)
    assert (event.type, event.id, event.time, event.proxy_id, event.provider) == (
        EventType.LEASE_RELEASED, "e1", 1765000000.25, "p1", "local",
    )  # fmt: skip
    assert (event.lease_id, event.pool, event.schema_version) == ("l1", "eu", 1)
    # `by` without a value is the owner's own call; a key without a code is written as is.
    assert msgspec.json.decode(body)["data"] == {
        "epoch": 17, "bytes_up": 512, "client": "team-a", "by": "team-a", "custom": [1],
    }  # fmt: skip


def test_a_record_without_a_pool_leaves_the_key_out() -> None:
    code = str(EVENT_CODES[EventType.PROXY_READY])
    body = expand(_record(code, "e2", "1", "p1", "local", "", ""))[2]
    assert list(msgspec.json.decode(body)) == [
        "type", "schema_version", "id", "time", "proxy_id", "provider", "lease_id", "data",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (_record("99", "e", "1", "p", "x", "", ""), "unknown event code"),
        (_record("x1", "e", "1", "p", "x", "", ""), "unknown event code"),
        (_record("4", "e", "1"), "3 fields"),
        (_record("4", "e", "1", "p", "x", "", "", "1"), "8 fields"),
        (_record("4", "e", "1", "p", "x", "", "", "999", "1"), "unknown data key code"),
        (_record("4", "e", "1", "p", "x", "", "", "1", ""), "no value for epoch"),
    ],
)
def test_a_record_this_version_cannot_read_is_refused(record: str, why: str) -> None:
    with pytest.raises(BadRecord, match=why):
        expand(record)


async def test_a_value_holding_the_separator_stays_one_field(
    registry: ProxyRegistry, leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await redis_client.delete("pf:outbox")
    holder = f"worker{RECORD_SEP}7"
    await leases.grant(GrantRequest(ttl=60, holder=holder, target="a.example:443", client="c"))
    [entry] = await Outbox(redis_client).peek()
    event = event_decoder.decode(entry.body)
    assert (event.type, event.data.holder, event.data.client, event.data.by) == (
        EventType.LEASE_GRANTED, holder, "c", "c",
    )  # fmt: skip


async def test_an_unreadable_entry_is_left_for_another_relay_and_the_rest_are_read(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    outbox = Outbox(redis_client)
    await outbox.ensure_group()
    await redis_client.xadd(outbox.key, {FIELD: _record("99", "e", "1", "p", "x", "", "")})
    await registry.create(make_proxy("p1", clock))
    read = await outbox.read("relay-1", 10)
    assert [e.subject for e in read] == [
        "proxyfleet.events.proxy.pending", "proxyfleet.intents.local.create",
    ]  # fmt: skip
    assert await outbox.pending() == 3  # the unreadable one too: not acked, not lost
