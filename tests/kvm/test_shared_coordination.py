"""The coordination ports in Redis (`provisioner_kvm.shared`), on a real Redis: an upload
lock has one holder, whom the others wait for (bounded), renewed while held and checked by
its fence; pins are shared; an outage is a temporary provider error."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from proxyfleet.common.core.errors import TemporaryProviderError
from proxyfleet.common.store import Locks, Pins, connect_redis
from proxyfleet.provisioner_kvm.shared import SharedPins, SharedUploads


def uploads(client: aioredis.Redis, token: str, **kw: float) -> SharedUploads:
    return SharedUploads(Locks(client), "onprem", token=token, poll=0.02, **kw)


async def test_the_second_holder_waits_for_the_first(redis_client: aioredis.Redis) -> None:
    one, two = uploads(redis_client, "one"), uploads(redis_client, "two")
    order: list[str] = []
    first_in = asyncio.Event()

    async def first() -> None:
        async with one.hold("hv1", "base"):
            first_in.set()
            await asyncio.sleep(0.2)  # the upload
            order.append("first done")

    async def second() -> None:
        await first_in.wait()
        async with two.hold("hv1", "base"):
            order.append("second in")

    await asyncio.gather(first(), second())
    assert order == ["first done", "second in"]
    assert await Locks(redis_client).holder(one.lock_name("hv1", "base")) == ""  # released


async def test_other_hosts_and_volumes_do_not_wait(redis_client: aioredis.Redis) -> None:
    one, two = uploads(redis_client, "one", wait=0.1), uploads(redis_client, "two", wait=0.1)
    async with (
        one.hold("hv1", "base"),
        two.hold("hv2", "base"),
        two.hold("hv1", "other"),
    ):
        pass


async def test_the_wait_is_bounded(redis_client: aioredis.Redis) -> None:
    one, two = uploads(redis_client, "one"), uploads(redis_client, "two", wait=0.1)
    async with one.hold("hv1", "base"):
        with pytest.raises(TemporaryProviderError, match=r"base is being uploaded by one-"):
            async with two.hold("hv1", "base"):
                pytest.fail("held twice")


async def test_the_lock_is_renewed_while_held(redis_client: aioredis.Redis) -> None:
    one = uploads(redis_client, "one", ttl=0.6)
    two = uploads(redis_client, "two", ttl=0.6, wait=0.05)
    async with one.hold("hv1", "base") as fence:
        await asyncio.sleep(1.5)  # more than two ttls
        with pytest.raises(TemporaryProviderError, match="is being uploaded"):
            async with two.hold("hv1", "base"):
                pytest.fail("held twice")
        await fence()


async def test_a_dead_holders_lock_is_free_after_its_ttl(redis_client: aioredis.Redis) -> None:
    one = uploads(redis_client, "one")
    # A replica that took the lock and died: nobody renews or releases it.
    await Locks(redis_client).acquire([one.lock_name("hv1", "base")], "dead", 0.3)
    async with asyncio.timeout(5), one.hold("hv1", "base") as fence:
        await fence()


async def test_a_lost_lock_fails_the_fence(redis_client: aioredis.Redis) -> None:
    one = uploads(redis_client, "one")
    async with one.hold("hv1", "base") as fence:
        await fence()
        await redis_client.delete(Locks(redis_client).key(one.lock_name("hv1", "base")))
        with pytest.raises(TemporaryProviderError, match="lost the upload lock of base"):
            await fence()


async def test_pins_are_shared(redis_client: aioredis.Redis) -> None:
    one = SharedPins(Pins(redis_client, "kvm:onprem"), ttl=30)
    two = SharedPins(Pins(redis_client, "kvm:onprem"), ttl=30)
    await one.put("p1", "hv1")
    assert await two.get("p1") == "hv1"
    await two.drop("p1")
    assert await one.get("p1") is None


async def test_an_outage_is_a_temporary_provider_error() -> None:
    client = connect_redis("redis://127.0.0.1:1/0")
    try:
        with pytest.raises(TemporaryProviderError, match="reading its placement pin") as caught:
            await SharedPins(Pins(client, "kvm:onprem")).get("p1")
        assert caught.value.retry_after is not None
        with pytest.raises(TemporaryProviderError, match="taking the upload lock of base"):
            async with uploads(client, "one").hold("hv1", "base"):
                pytest.fail("held without Redis")
    finally:
        await client.aclose()
