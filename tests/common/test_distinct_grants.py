"""`distinct` grants against a real Redis: a client spreading one crawl over many leases
gets exit networks (or addresses) it holds no other lease on, or a 503 saying why."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, Unavailable
from proxyfleet.common.domain.egress import network
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.egress_holds import NOT_DISTINCT, Exclusivity
from proxyfleet.common.store.lease_terms import LeasePolicy


@pytest.fixture
def leases(redis_client: aioredis.Redis, clock: ManualClock) -> LeaseStore:
    policy = LeasePolicy(cooldown=0, max_ttl=600)
    return LeaseStore(redis_client, clock, policy, exclusivity=Exclusivity({"local": "ip"}))


@pytest.fixture
async def two_networks(registry: ProxyRegistry, clock: ManualClock) -> None:
    """Four proxies on four addresses, two in 127.0.1.0/24 and two in 127.0.2.0/24."""
    for pid, ip in (("a1", "127.0.1.1"), ("a2", "127.0.1.2"), ("b1", "127.0.2.1"),
                    ("b2", "127.0.2.2")):  # fmt: skip
        await make_ready(registry, make_proxy(pid, clock))
        await registry.update(pid, egress_ip=ip, egress_net=network(ip))


def crawl(**kw: object) -> GrantRequest:
    return GrantRequest(ttl=60, client="crawler", distinct="subnet", **kw)  # type: ignore[arg-type]


@pytest.mark.usefixtures("two_networks")
async def test_distinct_subnet_spreads_a_client_over_networks(leases: LeaseStore) -> None:
    first = await leases.grant(crawl())
    second = await leases.grant(crawl())
    assert network(first.egress_ip) != network(second.egress_ip)
    with pytest.raises(Unavailable) as refused:
        await leases.grant(crawl())
    assert str(refused.value) == NOT_DISTINCT
    assert refused.value.code == "egress_not_distinct"
    # Another client is not held back by the crawler's leases.
    other = await leases.grant(GrantRequest(ttl=60, client="other", distinct="subnet"))
    assert other.egress_ip
    # Once the crawler lets go of a network, it may have that network again.
    await leases.release(first.id, first.epoch)
    again = await leases.grant(crawl())
    assert network(again.egress_ip) == network(first.egress_ip)


@pytest.mark.usefixtures("two_networks")
async def test_distinct_ip_allows_one_network_twice(leases: LeaseStore) -> None:
    got = [
        await leases.grant(GrantRequest(ttl=60, client="crawler", distinct="ip")) for _ in range(4)
    ]
    assert len({lease.egress_ip for lease in got}) == 4


@pytest.mark.usefixtures("two_networks")
async def test_a_named_proxy_on_a_network_the_client_holds_is_a_409(
    leases: LeaseStore,
) -> None:
    first = await leases.grant(crawl(proxy_id="a1"))
    with pytest.raises(Conflict, match="already holds") as refused:
        await leases.grant(crawl(proxy_id="a2"))
    assert refused.value.code == "egress_not_distinct"
    assert (await leases.grant(crawl(proxy_id="b1"))).proxy_id == "b1"
    await leases.release(first.id, first.epoch)
    assert (await leases.grant(crawl(proxy_id="a2"))).proxy_id == "a2"


async def test_an_unknown_address_never_counts_as_distinct(
    leases: LeaseStore, registry: ProxyRegistry, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("u", clock))
    with pytest.raises(Unavailable, match="does not already hold"):
        await leases.grant(crawl())
    assert (await leases.grant(GrantRequest(ttl=60, client="crawler"))).proxy_id == "u"


@pytest.mark.usefixtures("two_networks")
async def test_the_client_index_follows_its_leases(
    leases: LeaseStore, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """client_egress:<client> counts the client's active leases per address and network,
    and is gone once they have all ended (release and expiry alike)."""
    a = await leases.grant(GrantRequest(ttl=60, client="crawler", proxy_id="a1"))
    await leases.grant(GrantRequest(ttl=5, client="crawler", proxy_id="a2"))
    index = await redis_client.hgetall("pf:client_egress:crawler")
    assert index == {"ip:127.0.1.1": "1", "ip:127.0.1.2": "1", "net:127.0.1.0/24": "2"}
    await leases.release(a.id, a.epoch)
    clock.advance(6)
    await leases.expire_due()
    assert await redis_client.exists("pf:client_egress:crawler") == 0
