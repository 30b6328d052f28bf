"""The prelude of every Lua script: the rules the scripts share with Python (phase sets,
reply codes, subjects, event types, the JSON of an event and of an intent), written in Lua
from their one Python definition when a script is loaded (once per process)."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache

import msgspec

from proxyfleet.common.domain.lifecycle import COUNTED, PROBED
from proxyfleet.common.store.replies import FAMILIES, lua_name
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import SCHEMA_VERSION, Event, EventType
from proxyfleet.common.wire.models import CreateIntent, DeleteIntent

_EVENT_ORDER = (
    "type", "schema_version", "id", "time", "proxy_id", "provider", "lease_id", "pool", "data",
)  # fmt: skip
"""events.Event's fields in the order the scripts have always written them."""
_LEFT_OUT_WHEN_NIL = frozenset({"pool"})
"""Event fields a script leaves out of the JSON by passing nil (pool: only a member's)."""

_HOLE = "\x00"


def _lua_str(text: str) -> str:
    """A Lua string literal of `text`."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _subject(lua: str, make: Callable[[str], str], param: str) -> str:
    """A Lua function building the subject `make` builds (subjects.py's)."""
    prefix, suffix = make(_HOLE).split(_HOLE)
    body = f"{_lua_str(prefix)} .. {param}" + (f" .. {_lua_str(suffix)}" if suffix else "")
    return f"local function {lua}({param}) return {body} end"


def _table(lua: str, items: Iterable[tuple[str, str]]) -> str:
    return f"local {lua} = {{{', '.join(f'{k} = {v}' for k, v in items)}}}"


def _json_builder(
    lua: str,
    struct: type[msgspec.Struct],
    order: Iterable[str] | None = None,
    constants: Mapping[str, str] | None = None,
) -> str:
    """A Lua function `lua(v)` writing `struct` as JSON from `v`, a table of its fields'
    values by field name, each already JSON; the tag and `constants` (JSON) are fixed."""
    info = msgspec.inspect.type_info(struct)
    if not isinstance(info, msgspec.inspect.StructType):
        raise TypeError(f"{struct} is not a Struct")
    keys = {f.name: f.encode_name for f in info.fields}
    fixed = dict(constants or {})
    if info.tag_field is not None:
        keys = {info.tag_field: info.tag_field, **keys}
        fixed[info.tag_field] = json.dumps(info.tag)
    names = list(order or keys)
    if sorted(names) != sorted(keys):
        raise ValueError(f"{struct.__name__}'s fields are {sorted(keys)}, not {sorted(names)}")
    pieces: list[str] = []
    text = ""  # literal JSON not yet added to pieces
    for i, name in enumerate(names):
        key = ("," if i else "{") + json.dumps(keys[name]) + ":"
        if name in fixed:
            text += key + fixed[name]
            continue
        if name in _LEFT_OUT_WHEN_NIL:
            pieces += [_lua_str(text)] if text else []
            pieces.append(f"(v.{name} and ({_lua_str(key)} .. v.{name}) or '')")
            text = ""
            continue
        pieces += [_lua_str(text + key), f"v.{name}"]
        text = ""
    pieces.append(_lua_str(text + "}"))
    return f"local function {lua}(v) return {' .. '.join(pieces)} end"


def _enum_table(lua: str, members: Iterable[enum.Enum]) -> str:
    return _table(lua, ((m.name, _lua_str(str(m.value))) for m in members))


def _generated() -> Mapping[str, str]:
    """Each part of the prelude, after the comment that says what it is."""
    return {
        "phases health probes (a running resource)": _table(
            "PROBED", ((p.value, "true") for p in sorted(PROBED))
        ),
        "phases that count towards max_proxies": "local COUNTED = {"
        + ", ".join(_lua_str(p.value) for p in sorted(COUNTED))
        + "}",
        "reply codes (store/replies.py)": "\n".join(
            _table(lua_name(f), ((m.name, str(m.value)) for m in f)) for f in FAMILIES
        ),
        "event types (events.EventType)": _enum_table("EVENT", EventType),
        "subjects (subjects.py)": "\n".join(
            (
                _subject("event_subject", subjects.event_subject, "event_type"),
                _subject("intent_create_subject", subjects.intent_create, "provider"),
                _subject("intent_delete_subject", subjects.intent_delete, "provider"),
            )
        ),
        "an event's JSON (events.Event)": _json_builder(
            "event_json", Event, _EVENT_ORDER, {"schema_version": str(SCHEMA_VERSION)}
        ),
        "intents' JSON (models.CreateIntent, DeleteIntent)": "\n".join(
            (
                _json_builder("create_intent_json", CreateIntent),
                _json_builder("delete_intent_json", DeleteIntent),
            )
        ),
    }


@cache
def lua_prelude() -> str:
    """The prelude, the same for every script and every call."""
    parts = [f"-- {what}\n{lua}" for what, lua in _generated().items()]
    header = "-- Generated by proxyfleet.common.store.prelude from the Python definitions.\n"
    return header + "\n".join(parts) + "\n"
