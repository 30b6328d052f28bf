"""The egress script on a real Redis: the address index, sharing counts, the events, the
lease revoked when a confirmed address changes, and a deleted proxy leaving the index."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready, outbox_events

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.egress import AddressCounts, EgressStore
from proxyfleet.common.wire.models import Phase


@pytest.fixture
def egress(redis_client: aioredis.Redis, clock: ManualClock) -> EgressStore:
    return EgressStore(redis_client, clock)


async def _shared(registry: ProxyRegistry, pid: str) -> tuple[str, str, int]:
    proxy = await registry.get(pid)
    assert proxy is not None
    return proxy.egress_ip, proxy.egress_net, proxy.egress_shared


async def test_two_proxies_on_one_address_are_flagged(
    registry: ProxyRegistry, egress: EgressStore, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    for pid, zone in (("p1", "a"), ("p2", "a"), ("p3", "b")):
        await make_ready(registry, make_proxy(pid, clock, zone=zone, pool="web"))
    assert (await egress.confirm("p1", "127.0.0.5")).shared == 1
    assert (await egress.confirm("p2", "127.0.0.5")).shared == 2
    assert (await egress.confirm("p3", "127.0.0.6")).shared == 1

    assert await _shared(registry, "p1") == ("127.0.0.5", "127.0.0.0/24", 2)
    assert await _shared(registry, "p2") == ("127.0.0.5", "127.0.0.0/24", 2)
    assert await _shared(registry, "p3") == ("127.0.0.6", "127.0.0.0/24", 1)
    assert await egress.proxies_on("127.0.0.5") == {"p1", "p2"}
    assert await egress.counts("provider", "local") == AddressCounts(2, 3, 1)
    assert await egress.counts("zone", "local", "a") == AddressCounts(1, 2, 1)
    assert await egress.counts("zone", "local", "b") == AddressCounts(1, 1, 0)
    assert await egress.counts("pool", "web") == AddressCounts(2, 3, 1)
    assert await egress.groups() == [
        ("pool", ("web",)),
        ("provider", ("local",)),
        ("zone", ("local", "a")),
        ("zone", ("local", "b")),
    ]

    shared = [e for e in await outbox_events(redis_client) if e.type == "proxy.egress_shared"]
    assert [(e.proxy_id, e.data.egress_ip, e.data.shared_with) for e in shared] == [
        ("p2", "127.0.0.5", ["p1"])
    ]
    assert not [e for e in await outbox_events(redis_client) if e.type == "proxy.egress_changed"]


async def test_a_change_moves_the_proxy_announces_it_and_revokes_its_lease(
    registry: ProxyRegistry,
    egress: EgressStore,
    leases: LeaseStore,
    clock: ManualClock,
    redis_client: aioredis.Redis,
) -> None:
    for pid in ("p1", "p2"):
        await make_ready(registry, make_proxy(pid, clock))
    await egress.confirm("p1", "127.0.0.5")
    await egress.confirm("p2", "127.0.0.5")
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="p1", client="team"))

    wrote = await egress.confirm("p1", "127.0.0.9", pending="", pending_n=0)

    assert wrote.ended_lease_id == lease.id
    assert await _shared(registry, "p1") == ("127.0.0.9", "127.0.0.0/24", 1)
    assert await _shared(registry, "p2") == ("127.0.0.5", "127.0.0.0/24", 1)
    assert await egress.counts("provider", "local") == AddressCounts(2, 2, 0)
    got = await leases.get(lease.id)
    assert got is not None
    assert (got[1], got[0].reason) == ("revoked", "egress_changed")
    events = await outbox_events(redis_client)
    [changed] = [e for e in events if e.type == "proxy.egress_changed"]
    assert (changed.data.egress_ip, changed.data.from_egress_ip) == ("127.0.0.9", "127.0.0.5")
    [revoked] = [e for e in events if e.type == "lease.revoked"]
    assert (revoked.lease_id, revoked.data.reason, revoked.data.client) == (
        lease.id,
        "egress_changed",
        "team",
    )


async def test_revoke_off_keeps_the_lease(
    registry: ProxyRegistry, egress: EgressStore, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await egress.confirm("p1", "127.0.0.5")
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    wrote = await egress.confirm("p1", "127.0.0.9", revoke=False)
    assert wrote.ended_lease_id == ""
    got = await leases.get(lease.id)
    assert got is not None
    assert got[1] == "active"


async def test_first_address_revokes_nothing_and_fields_ride_along(
    registry: ProxyRegistry, egress: EgressStore, leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="p1"))
    wrote = await egress.confirm("p1", "127.0.0.5", fields={"ok_streak": 7})
    assert wrote.ended_lease_id == ""
    proxy = await registry.get("p1")
    assert proxy is not None
    assert (proxy.ok_streak, proxy.lease_id) == (7, lease.id)


async def test_deletion_clears_the_index(
    registry: ProxyRegistry, egress: EgressStore, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    for pid in ("p1", "p2"):
        await make_ready(registry, make_proxy(pid, clock))
        await egress.confirm(pid, "127.0.0.5")
    await registry.transition("p1", Phase.DELETING)
    await registry.transition("p1", Phase.DELETED)
    assert await egress.proxies_on("127.0.0.5") == {"p2"}
    assert await _shared(registry, "p2") == ("127.0.0.5", "127.0.0.0/24", 1)
    assert await egress.counts("provider", "local") == AddressCounts(1, 1, 0)
    await registry.transition("p2", Phase.DELETING)
    await registry.transition("p2", Phase.DELETED)
    assert await egress.proxies_on("127.0.0.5") == set()
    assert await redis_client.exists("pf:egress_counts:provider:local") == 0
    assert await egress.groups() == []
    assert await redis_client.exists("pf:egress_summary") == 0
    with pytest.raises(Conflict):
        await egress.confirm("p2", "127.0.0.5")  # going away: not indexed again


async def test_generation_checked(
    registry: ProxyRegistry, egress: EgressStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    proxy = await registry.get("p1")
    assert proxy is not None
    with pytest.raises(Conflict):
        await egress.confirm("p1", "127.0.0.5", expected_gen=proxy.gen - 1)
    with pytest.raises(NotFound):
        await egress.confirm("nope", "127.0.0.5")
    assert (await egress.confirm("p1", "127.0.0.5", expected_gen=proxy.gen)).gen == proxy.gen


async def test_a_zone_move_moves_the_address_count(
    registry: ProxyRegistry, egress: EgressStore, clock: ManualClock
) -> None:
    for pid in ("p1", "p2"):
        await make_ready(registry, make_proxy(pid, clock, zone="a"))
        await egress.confirm(pid, "127.0.0.5")
    await registry.update("p1", zone="b")
    assert await egress.counts("zone", "local", "a") == AddressCounts(1, 1, 0)
    assert await egress.counts("zone", "local", "b") == AddressCounts(1, 1, 0)
    assert await egress.counts("provider", "local") == AddressCounts(1, 2, 1)
    await registry.update("p2", zone="b")
    assert await egress.counts("zone", "local", "b") == AddressCounts(1, 2, 1)
    assert ("zone", ("local", "a")) not in await egress.groups()
