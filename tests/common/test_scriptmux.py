"""ScriptMux (the pipelined EVALSHA transport the API's stores and baseline use), against
the test Redis. Here because the benchmark work brought it; its home is tests/common."""

from __future__ import annotations

import asyncio
import contextlib
import re

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.core.ids import new_event_id, new_lease_id
from proxyfleet.common.store import LuaScript, ScriptMux, connect_redis
from proxyfleet.common.store.fastid import fast_id, fast_lease_id


async def test_concurrent_calls_each_get_their_own_reply(redis_client: aioredis.Redis) -> None:
    mux = ScriptMux.from_client(redis_client)
    echo = LuaScript("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1}")
    await redis_client.script_flush()  # the first call meets NOSCRIPT and falls back to EVAL
    try:
        replies = await asyncio.gather(*(mux.run(echo, [f"k{i}"], ["v", i]) for i in range(200)))
        assert replies == [[f"k{i}", "v", i + 1] for i in range(200)]
        assert await mux.command("PING") == "PONG"
    finally:
        await mux.aclose()


async def test_script_error_is_a_response_error(redis_client: aioredis.Redis) -> None:
    mux = ScriptMux.from_client(redis_client)
    try:
        with pytest.raises(ResponseError, match="boom"):
            await mux.run(LuaScript("return redis.error_reply('boom')"), [], [])
        assert await mux.run(LuaScript("return 7"), [], []) == 7  # the connection lives on
    finally:
        await mux.aclose()


async def test_selects_the_database_of_the_url(redis_url: str) -> None:
    base = redis_url.rsplit("/", 1)[0]
    client = connect_redis(f"{base}/3")
    mux = ScriptMux.from_client(client)
    try:
        await client.set("mux-db", "three")
        assert await mux.run(LuaScript("return redis.call('GET', KEYS[1])"), ["mux-db"], []) == (
            "three"
        )
    finally:
        await client.delete("mux-db")
        await mux.aclose()
        await client.aclose()


async def test_unreachable_redis_is_store_unavailable_with_a_retry_hint() -> None:
    mux = ScriptMux("127.0.0.1", 1)
    with pytest.raises(StoreUnavailable) as caught:
        await mux.command("PING")
    assert caught.value.retry_after == 1.0


async def test_a_located_primary_is_asked_again_at_each_connect(redis_url: str) -> None:
    """Through Sentinel the primary can move: the mux asks where it is when it connects."""
    port = int(redis_url.rsplit(":", 1)[1].split("/", 1)[0])
    asked: list[int] = []

    async def locate() -> tuple[str, int]:
        asked.append(port)
        return "127.0.0.1", port

    mux = ScriptMux("127.0.0.1", 1, locate=locate)  # port 1: never where it connects
    try:
        assert await mux.command("PING") == "PONG"
        own = await mux.command("CLIENT", "ID")
        assert await mux.command("CLIENT", "KILL", "ID", own, "SKIPME", "no") == 1
        for _ in range(2):  # a call sent before the close is seen fails: the next reconnects
            with contextlib.suppress(StoreUnavailable):
                assert await mux.command("PING") == "PONG"
                break
        assert len(asked) == 2  # reconnected where locate says
    finally:
        await mux.aclose()


def test_fast_ids_have_the_format_of_common_ids() -> None:
    ids = [fast_id("e") for _ in range(3_000)]  # crosses the 4 KiB random pool twice
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"e[0-9a-f]{19}", i) for i in ids)
    assert len(new_event_id()) == len(ids[0])


def test_lease_ids_carry_96_random_bits() -> None:
    ids = [fast_lease_id() for _ in range(1_000)]  # crosses the random pool
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"l[0-9a-f]{11}[0-9a-f]{24}", i) for i in ids)
    assert len({i[12:] for i in ids}) == len(ids)
    assert re.fullmatch(r"l[0-9a-f]{35}", new_lease_id())
