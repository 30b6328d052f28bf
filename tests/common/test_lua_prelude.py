"""Rules the Lua scripts share with Python come from their one Python definition, given to
every script in a generated prelude: the probed phases (`lifecycle.PROBED`) and those that
count towards max_proxies (`lifecycle.COUNTED`), the reply codes (store/replies.py), the
event types and the subjects."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import redis.asyncio as aioredis

from proxyfleet.common.domain.lifecycle import COUNTED, PROBED
from proxyfleet.common.store.prelude import lua_prelude
from proxyfleet.common.store.replies import FAMILIES, lua_name
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import EventType

LUA_FILES = [
    f
    for f in (resources.files("proxyfleet.common.store") / "lua").iterdir()
    if f.name.endswith(".lua")
]
BARE_CODE = re.compile(r"return \{?-?\d")
BOOLEAN_ANSWERS = {"mark_listed.lua"}
"""Scripts that answer 1 or 0 (written or not), not a code."""
SPELLED_OUT = re.compile(r"'booting'.{0,60}'ready'.{0,60}'unhealthy'", re.DOTALL)


def test_the_prelude_declares_the_probed_phases_of_lifecycle() -> None:
    [line] = [ln for ln in lua_prelude().splitlines() if ln.startswith("local PROBED")]
    declared = set(re.findall(r"(\w+) = true", line))
    assert declared == {p.value for p in PROBED}
    [line] = [ln for ln in lua_prelude().splitlines() if ln.startswith("local COUNTED")]
    assert set(re.findall(r"'(\w+)'", line)) == {p.value for p in COUNTED}


def test_no_script_spells_the_probed_phases_out_again() -> None:
    offenders = [f.name for f in LUA_FILES if SPELLED_OUT.search(f.read_text())]
    assert offenders == []


async def _eval(redis_client: aioredis.Redis, body: str) -> Any:
    return await redis_client.eval(lua_prelude() + body, 0)


async def test_the_prelude_holds_the_reply_codes_and_event_types_of_python(
    redis_client: aioredis.Redis,
) -> None:
    tables = ", ".join(f"{lua_name(f)} = {lua_name(f)}" for f in FAMILIES)
    got = json.loads(await _eval(redis_client, f"return cjson.encode({{{tables}, EVENT = EVENT}})"))
    for family in FAMILIES:
        assert got[lua_name(family)] == {m.name: m.value for m in family}
    assert got["EVENT"] == {t.name: t.value for t in EventType}


async def test_the_prelude_builds_the_subjects_of_subjects_py(
    redis_client: aioredis.Redis,
) -> None:
    got = await _eval(
        redis_client,
        "return {event_subject('proxy.ready'), intent_create_subject('gcp-eu'),"
        " intent_delete_subject('gcp-eu')}",
    )
    assert got == [
        subjects.event_subject(EventType.PROXY_READY),
        subjects.intent_create("gcp-eu"),
        subjects.intent_delete("gcp-eu"),
    ]


def test_no_script_answers_a_bare_code_or_names_a_subject_or_event_type() -> None:
    literals = {f"'{t.value}'" for t in EventType} | {f"'{subjects.EVENT_PREFIX}", "'proxyfleet."}
    for lua in LUA_FILES:
        code = "\n".join(ln.split("--")[0] for ln in lua.read_text().splitlines())
        if lua.name not in BOOLEAN_ANSWERS:
            assert not BARE_CODE.search(code), lua.name
        assert [s for s in literals if s in code] == [], lua.name
