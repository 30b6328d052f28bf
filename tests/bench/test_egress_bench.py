"""The exclusivity benchmark's fleet: mostly distinct exit addresses, some shared."""

from __future__ import annotations

import redis.asyncio as aioredis

from proxyfleet.bench.egress_bench import SHARED_EVERY, address_of, seed
from proxyfleet.common.domain.egress import normalize


def test_one_proxy_in_ten_shares_its_neighbours_address() -> None:
    addresses = [address_of(i) for i in range(1_000)]
    assert all(normalize(a) == a for a in addresses)
    assert len(set(addresses)) == 1_000 - 1_000 // SHARED_EVERY
    assert address_of(SHARED_EVERY - 1) == address_of(SHARED_EVERY - 2)
    assert address_of(70_000) != address_of(70_000 - 65_536)  # no wrap within a fleet


async def test_seeded_proxies_carry_their_addresses(redis_client: aioredis.Redis) -> None:
    assert await seed(redis_client, 20) == 18
    got = await redis_client.hmget("pf:proxy:pb0000019", "egress_ip", "egress_net", "phase")
    assert got == [address_of(18), "10.0.0.0/24", "ready"]
