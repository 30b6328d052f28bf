"""Named locks with a token and a ttl (store.Locks), on a real Redis: one holder at a
time, extended and released only by its token, free again once the ttl passes."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from proxyfleet.common.store import Locks


async def _until_gone(redis_client: aioredis.Redis, key: str) -> None:
    """Redis expires on its own clock: wait (bounded) until the key is gone."""
    async with asyncio.timeout(5):
        while await redis_client.exists(key):  # noqa: ASYNC110 - Redis offers no event
            await asyncio.sleep(0.02)


async def test_one_holder_at_a_time(redis_client: aioredis.Redis) -> None:
    locks = Locks(redis_client)

    assert await locks.acquire(["gc:a", "gc:b"], "one", 30) == ["one", "one"]
    assert await locks.acquire(["gc:a", "gc:c"], "two", 30) == ["one", "two"]

    assert (await locks.holder("gc:a"), await locks.holder("gc:c")) == ("one", "two")
    assert await locks.holder("gc:free") == ""
    assert await redis_client.get("pf:lock:gc:a") == "one"


async def test_contenders_at_once_get_one_holder(redis_client: aioredis.Redis) -> None:
    locks = Locks(redis_client)

    got = await asyncio.gather(*(locks.acquire(["gc:a"], f"t{i}", 30) for i in range(8)))

    assert len({holder for (holder,) in got}) == 1
    assert sum(1 for i, (holder,) in enumerate(got) if holder == f"t{i}") == 1  # the winner


async def test_the_holder_extends_its_lock_by_acquire_or_renew(
    redis_client: aioredis.Redis,
) -> None:
    locks = Locks(redis_client)
    await locks.acquire(["gc:a"], "one", 10)
    assert 0 < await redis_client.pttl("pf:lock:gc:a") <= 10_000

    assert await locks.acquire(["gc:a"], "one", 60) == ["one"]
    assert await redis_client.pttl("pf:lock:gc:a") > 10_000
    assert await locks.renew({"gc:a"}, "one", 120) == {"gc:a"}
    assert await redis_client.pttl("pf:lock:gc:a") > 60_000


async def test_renew_and_release_are_token_checked(redis_client: aioredis.Redis) -> None:
    locks = Locks(redis_client)
    await locks.acquire(["gc:a"], "one", 10)

    assert await locks.renew({"gc:a"}, "two", 60) == set()
    assert await redis_client.pttl("pf:lock:gc:a") <= 10_000  # not extended by "two"
    assert await locks.release({"gc:a"}, "two") == set()
    assert await locks.holder("gc:a") == "one"

    assert await locks.release({"gc:a", "gc:never"}, "one") == {"gc:a"}
    assert await locks.holder("gc:a") == ""
    assert await locks.acquire(["gc:a"], "two", 10) == ["two"]


async def test_an_expired_lock_is_free_and_never_renewed(redis_client: aioredis.Redis) -> None:
    locks = Locks(redis_client)
    await locks.acquire(["gc:a", "gc:b"], "one", 0.1)
    await _until_gone(redis_client, "pf:lock:gc:a")
    await _until_gone(redis_client, "pf:lock:gc:b")

    # Expired and free: the old holder's renew does not take it back...
    assert await locks.renew({"gc:a"}, "one", 30) == set()
    assert not await redis_client.exists("pf:lock:gc:a")
    # ...and another takes it; then the old holder can neither renew nor release it.
    assert await locks.acquire(["gc:b"], "two", 30) == ["two"]
    assert await locks.renew({"gc:b"}, "one", 30) == set()
    assert await locks.release({"gc:b"}, "one") == set()
    assert await locks.holder("gc:b") == "two"


async def test_namespaces_do_not_share_locks(redis_client: aioredis.Redis) -> None:
    assert await Locks(redis_client).acquire(["gc:a"], "one", 30) == ["one"]
    assert await Locks(redis_client, namespace="other").acquire(["gc:a"], "two", 30) == ["two"]


async def test_no_names_no_call(redis_client: aioredis.Redis) -> None:
    locks = Locks(redis_client)
    assert await locks.acquire([], "one", 30) == []
    assert await locks.renew(set(), "one", 30) == set()
    assert await locks.release(set(), "one") == set()
