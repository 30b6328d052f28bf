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
_ENVELOPE = 7
"""Fields before the data: code, id, time, proxy id, provider, lease id, pool."""


class BadRecord(ValueError):
    """An entry that is no record this version can read."""


def _json(text: str) -> str:
    return msgspec.json.encode(text).decode()


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
    data, client = [], ""
    for i in range(_ENVELOPE, len(fields), 2):
        key, value = fields[i], fields[i + 1]
        if key.isdigit():
            try:
                key = DATA_KEYS[int(key) - 1]
            except IndexError:
                raise BadRecord(f"unknown data key code {key}") from None
        if key == "client":
            client = value
        elif key == "by" and not value:
            value = client  # the owner's own call
        if not value:
            raise BadRecord(f"no value for {key}")
        data.append(f"{_json(key)}:{value}")
    in_pool = f',"pool":{_json(pool)}' if pool else ""
    body = (
        f'{{"type":"{kind.value}","schema_version":{SCHEMA_VERSION},"id":{_json(event_id)},'
        f'"time":{time},"proxy_id":{_json(proxy_id)},"provider":{_json(provider)},'
        f'"lease_id":{_json(lease_id)}{in_pool},"data":{{{",".join(data)}}}}}'
    )
    return subjects.event_subject(kind.value), event_id, body.encode()


def lua_tables() -> str:
    """The scripts' EVENT_CODE (type -> code) and DATA_KEY (key -> code) tables."""
    codes = ", ".join(f"['{kind.value}'] = {code}" for kind, code in EVENT_CODES.items())
    keys = ", ".join(f"['{key}'] = {i}" for i, key in enumerate(DATA_KEYS, 1))
    return f"local EVENT_CODE = {{{codes}}}\nlocal DATA_KEY = {{{keys}}}"
