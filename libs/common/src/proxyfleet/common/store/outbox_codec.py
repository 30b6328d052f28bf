"""The outbox's compact event record (no I/O): what a script appends for an event, and how
a relay turns it back into the event it publishes.

An event's JSON repeats its field names and its subject in every entry; at thousands of
events a second an outbox that NATS cannot take grows by that much. So a script writes one
field, `e`: the event type's code, the id, the time, the proxy id, the provider, the lease
id and the pool, then the data as key code and JSON value, all joined by RECORD_SEP (`by`
with no value: the same as `client`, the owner's own call). The
relay builds the published event from it, in the shape events.Event documents (the subject
from the type, the `Nats-Msg-Id` the event id).

RECORD_SEP never occurs in a field: ids, names and numbers are plain text, and every data
value is JSON whose encoder escapes control characters (cjson in the scripts, msgspec in
Python). The codes are append-only: an entry written by one version is read by the next."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import SCHEMA_VERSION, EventType

RECORD_SEP = "\x1f"
"""Between the fields of a record (ASCII unit separator)."""

FIELD = "e"
"""The stream field holding a record (other entries: `s` subject, `i` id, `d` body)."""

EVENT_CODES: Mapping[EventType, int] = {
    EventType.PROXY_PENDING: 1,
    EventType.PROXY_PROVISIONING: 2,
    EventType.PROXY_BOOTING: 3,
    EventType.PROXY_READY: 4,
    EventType.PROXY_UNHEALTHY: 5,
    EventType.PROXY_DELETING: 6,
    EventType.PROXY_DELETED: 7,
    EventType.PROXY_FAILED: 8,
    EventType.PROXY_ADOPTED: 9,
    EventType.PROXY_EGRESS_CHANGED: 10,
    EventType.PROXY_EGRESS_SHARED: 11,
    EventType.LEASE_GRANTED: 12,
    EventType.LEASE_RENEWED: 13,
    EventType.LEASE_REPORTED: 14,
    EventType.LEASE_RELEASED: 15,
    EventType.LEASE_EXPIRED: 16,
    EventType.LEASE_REVOKED: 17,
    EventType.PROXY_DRAINED: 18,
    EventType.PROXY_QUARANTINED: 19,
    EventType.PROXY_UNQUARANTINED: 20,
    EventType.POOL_APPLIED: 21,
    EventType.POOL_SCALED: 22,
    EventType.POOL_RECYCLING: 23,
    EventType.POOL_CONDITION: 24,
    EventType.POOL_DELETING: 25,
    EventType.POOL_DELETED: 26,
    EventType.SOURCE_ENTRY_REJECTED: 27,
    EventType.SOURCE_LOAD_FAILED: 28,
}
"""Each event type's code in a record (append new types; never renumber)."""

DATA_KEYS: Sequence[str] = (
    "epoch", "holder", "target", "expires_at", "client", "by", "egress_ip", "bytes_up",
    "bytes_down", "from", "gen", "reason", "zone", "from_zone", "outcome", "size",
    "from_size", "owner", "condition", "status", "message", "keep_proxies",
    "from_egress_ip", "shared_with", "source", "line",
)  # fmt: skip
"""Data keys written as their code (1-based index; append new keys, never reorder). A key
not listed is written as itself."""

_TYPES = {code: kind for kind, code in EVENT_CODES.items()}
_KEY_NAMES = {str(code): key for code, key in enumerate(DATA_KEYS, 1)}
_ENVELOPE = 7
"""Fields before the data: code, id, time, proxy id, provider, lease id, pool."""


class BadRecord(ValueError):
    """An entry that is no record this version can read."""


_encode = msgspec.json.Encoder().encode


def expand(record: str) -> tuple[str, str, bytes]:
    """(subject, Nats-Msg-Id, JSON body) of the event in `record`."""
    fields = record.split(RECORD_SEP)
    if len(fields) < _ENVELOPE or len(fields) % 2 == 0:
        raise BadRecord(f"{len(fields)} fields")
    code, event_id, time, proxy_id, provider, lease_id, pool = fields[:_ENVELOPE]
    try:
        kind = _TYPES[int(code)]
    except (KeyError, ValueError):
        raise BadRecord(f"unknown event code {code!r}") from None
    data: dict[str, msgspec.Raw] = {}
    client = ""
    for key, written in zip(fields[_ENVELOPE::2], fields[_ENVELOPE + 1 :: 2], strict=True):
        name = _KEY_NAMES.get(key)
        if name is None:
            if key.isdigit():
                raise BadRecord(f"unknown data key code {key}")
            name = key
        value = client if name == "by" and not written else written  # by: the owner's call
        if name == "client":
            client = value
        if not value:
            raise BadRecord(f"no value for {name}")
        data[name] = msgspec.Raw(value)
    # events.Event's shape, its keys in the order the scripts always wrote them (one
    # encoder call: the values written as JSON in the record are passed through raw).
    event: dict[str, object] = {
        "type": kind.value, "schema_version": SCHEMA_VERSION, "id": event_id,
        "time": msgspec.Raw(time), "proxy_id": proxy_id, "provider": provider,
        "lease_id": lease_id,
    }  # fmt: skip
    if pool:
        event["pool"] = pool
    event["data"] = data
    return subjects.event_subject(kind.value), event_id, _encode(event)


def lua_tables() -> str:
    """The scripts' EVENT_CODE (type -> code) and DATA_KEY (key -> code) tables."""
    codes = ", ".join(f"['{kind.value}'] = {code}" for kind, code in EVENT_CODES.items())
    keys = ", ".join(f"['{key}'] = {i}" for i, key in enumerate(DATA_KEYS, 1))
    return f"local EVENT_CODE = {{{codes}}}\nlocal DATA_KEY = {{{keys}}}"
