"""Pins with a ttl (store.Pins), on a real Redis: a value per key and scope, replaced by a
later put, gone once dropped or once its ttl passes."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.store import Pins, connect_redis


async def test_a_pin_is_kept_replaced_and_dropped(redis_client: aioredis.Redis) -> None:
    pins = Pins(redis_client, "kvm:onprem")

    assert await pins.get("p1") is None
    await pins.put("p1", "hv1", 30)
    await pins.put("p2", "hv2", 30)
    assert (await pins.get("p1"), await pins.get("p2")) == ("hv1", "hv2")
    assert await redis_client.get("pf:pin:kvm:onprem:p1") == "hv1"
    assert 29_000 < await redis_client.pttl("pf:pin:kvm:onprem:p1") <= 30_000

    await pins.put("p1", "hv3", 30)
    assert await pins.get("p1") == "hv3"
    await pins.drop("p1")
    await pins.drop("p1")  # dropping twice is fine
    assert (await pins.get("p1"), await pins.get("p2")) == (None, "hv2")


async def test_scopes_and_namespaces_are_apart(redis_client: aioredis.Redis) -> None:
    await Pins(redis_client, "kvm:a").put("p1", "hv1", 30)

    assert await Pins(redis_client, "kvm:b").get("p1") is None
    assert await Pins(redis_client, "kvm:a", namespace="other").get("p1") is None


async def test_a_pin_expires_after_its_ttl(redis_client: aioredis.Redis) -> None:
    pins = Pins(redis_client, "kvm:onprem")
    await pins.put("p1", "hv1", 0.05)
    async with asyncio.timeout(5):  # Redis expires on its own clock
        while await pins.get("p1") is not None:  # noqa: ASYNC110 - Redis offers no event
            await asyncio.sleep(0.02)


async def test_an_outage_is_store_unavailable() -> None:
    client = connect_redis("redis://127.0.0.1:1/0")
    try:
        with pytest.raises(StoreUnavailable):
            await Pins(client, "kvm:onprem").get("p1")
    finally:
        await client.aclose()
