"""Grants by exit address, against a real Redis: the `ip`, `subnet` and `none` modes, an
unknown address, cooldowns that follow the address, a pool's own mode, the holds given
back by every way a lease ends."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready, outbox_events

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, Unavailable
from proxyfleet.common.domain.egress import Exclusive, network
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec
from proxyfleet.common.store import GrantRequest, LeaseStore, PoolStore, ProxyRegistry
from proxyfleet.common.store.egress_holds import Exclusivity
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import Phase

COOLDOWN = 30.0


def store(
    redis_client: aioredis.Redis, clock: ManualClock, mode: Exclusive, cooldown: float = COOLDOWN
) -> LeaseStore:
    policy = LeasePolicy(cooldown=cooldown, max_ttl=600)
    return LeaseStore(redis_client, clock, policy, exclusivity=Exclusivity({"local": mode}))


async def on_address(
    registry: ProxyRegistry, clock: ManualClock, pid: str, ip: str, **kw: object
) -> None:
    """A ready proxy health has seen leave through `ip` ("" : not known yet)."""
    await make_ready(registry, make_proxy(pid, clock, **kw))
    if ip:
        await registry.update(pid, egress_ip=ip, egress_net=network(ip))


async def test_ip_mode_never_grants_two_proxies_on_one_address(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    leases = store(redis_client, clock, "ip")
    await on_address(registry, clock, "a", "127.0.1.1")
    await on_address(registry, clock, "b", "127.0.1.1")
    await on_address(registry, clock, "c", "127.0.1.2")  # same /24, another address
    first = await leases.grant(GrantRequest(ttl=60))
    second = await leases.grant(GrantRequest(ttl=60))
    assert {first.proxy_id, second.proxy_id} in ({"a", "c"}, {"b", "c"})
    with pytest.raises(Unavailable, match="exit address another lease holds") as none:
        await leases.grant(GrantRequest(ttl=60))
    assert none.value.retry_after == pytest.approx(60)  # when the holding lease ends
    other = "b" if first.proxy_id == "a" else "a"
    with pytest.raises(Conflict, match="held by another lease") as named:
        await leases.grant(GrantRequest(ttl=60, proxy_id=other))
    assert named.value.code == "egress_held"
    assert named.value.retry_after == pytest.approx(60)
    assert first.egress_ip == "127.0.1.1"
    granted = [e for e in await outbox_events(redis_client) if e.type == "lease.granted"]
    assert {e.data.egress_ip for e in granted} == {"127.0.1.1", "127.0.1.2"}


async def test_cooldown_follows_the_address(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """Releasing A starts a cooldown on A's address, which B (same address) honours."""
    leases = store(redis_client, clock, "ip")
    await on_address(registry, clock, "a", "127.0.1.1")
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="a"))
    await on_address(registry, clock, "b", "127.0.1.1")
    await leases.release(lease.id, lease.epoch)
    clock.advance(10)
    with pytest.raises(Conflict, match="cooling down") as named:
        await leases.grant(GrantRequest(ttl=60, proxy_id="b"))
    assert named.value.code == "egress_cooling"
    assert named.value.retry_after == pytest.approx(20)
    with pytest.raises(Unavailable) as none:
        await leases.grant(GrantRequest(ttl=60))
    assert none.value.retry_after == pytest.approx(20)
    clock.advance(20.5)
    assert (await leases.grant(GrantRequest(ttl=60, proxy_id="b"))).egress_ip == "127.0.1.1"


async def test_subnet_mode_holds_the_whole_network(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """Two /24s of 127/8: one lease per network at a time; its release cools the network."""
    leases = store(redis_client, clock, "subnet")
    for pid, ip in (("a1", "127.0.1.1"), ("a2", "127.0.1.2"), ("b1", "127.0.2.1")):
        await on_address(registry, clock, pid, ip)
    one = await leases.grant(GrantRequest(ttl=60))
    two = await leases.grant(GrantRequest(ttl=60))
    assert {network(one.egress_ip), network(two.egress_ip)} == {"127.0.1.0/24", "127.0.2.0/24"}
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60))
    in_a = one if one.proxy_id.startswith("a") else two
    await leases.release(in_a.id, in_a.epoch)
    sibling = "a2" if in_a.proxy_id == "a1" else "a1"
    with pytest.raises(Conflict, match="cooling down"):
        await leases.grant(GrantRequest(ttl=60, proxy_id=sibling))
    clock.advance(COOLDOWN + 1)
    assert (await leases.grant(GrantRequest(ttl=60, proxy_id=sibling))).proxy_id == sibling


async def test_a_subnet_lease_blocks_an_ip_mode_grant_in_its_network(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """A pool in `subnet` mode holds its member's network against the `ip`-mode fleet."""
    pools = PoolStore(redis_client, clock)
    await pools.apply("wide", PoolSpec(provider="local", size=1, egress_exclusive="subnet"),
                      Owner.API)  # fmt: skip
    leases = store(redis_client, clock, "ip")
    await on_address(registry, clock, "m", "127.0.3.1", pool="wide")
    await on_address(registry, clock, "x", "127.0.3.2")
    held = await leases.grant(GrantRequest(ttl=60, pool="wide"))
    assert held.proxy_id == "m"
    with pytest.raises(Conflict, match="held by another lease"):
        await leases.grant(GrantRequest(ttl=60, proxy_id="x"))
    await leases.release(held.id, held.epoch)
    assert (await leases.grant(GrantRequest(ttl=60, proxy_id="x"))).proxy_id == "x"


async def test_none_mode_grants_both_and_a_pool_overrides_its_provider(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    pools = PoolStore(redis_client, clock)
    await pools.apply("strict", PoolSpec(provider="local", size=2, egress_exclusive="ip"),
                      Owner.API)  # fmt: skip
    leases = store(redis_client, clock, "none")
    await on_address(registry, clock, "a", "127.0.4.1")
    await on_address(registry, clock, "b", "127.0.4.1")
    both = [await leases.grant(GrantRequest(ttl=60)) for _ in range(2)]
    assert {lease.proxy_id for lease in both} == {"a", "b"}
    await on_address(registry, clock, "p", "127.0.5.1", pool="strict")
    await on_address(registry, clock, "q", "127.0.5.1", pool="strict")
    assert (await leases.grant(GrantRequest(ttl=60, pool="strict"))).egress_ip == "127.0.5.1"
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=60, pool="strict"))
    # The pool's mode goes: its members fall back to their provider's (`none`).
    await pools.apply("strict", PoolSpec(provider="local", size=2), Owner.API)
    assert (await leases.grant(GrantRequest(ttl=60, pool="strict"))).egress_ip == "127.0.5.1"


async def test_a_none_mode_lease_still_holds_against_an_ip_mode_grant(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    pools = PoolStore(redis_client, clock)
    await pools.apply("loose", PoolSpec(provider="local", size=1, egress_exclusive="none"),
                      Owner.API)  # fmt: skip
    leases = store(redis_client, clock, "ip")
    await on_address(registry, clock, "n", "127.0.6.1", pool="loose")
    await on_address(registry, clock, "i", "127.0.6.1")
    await leases.grant(GrantRequest(ttl=60, pool="loose"))
    with pytest.raises(Conflict, match="held by another lease"):
        await leases.grant(GrantRequest(ttl=60, proxy_id="i"))


async def test_an_unknown_address_is_granted_and_holds_nothing(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    leases = store(redis_client, clock, "ip")
    await on_address(registry, clock, "u1", "")
    await on_address(registry, clock, "u2", "")
    both = [await leases.grant(GrantRequest(ttl=60)) for _ in range(2)]
    assert [lease.egress_ip for lease in both] == ["", ""]
    assert await redis_client.keys("pf:egress_held:*") == []


async def test_every_way_a_lease_ends_gives_its_address_back(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """Expiry and revocation (the proxy turned unhealthy) free the address as release does;
    a revocation starts no cooldown."""
    leases = store(redis_client, clock, "ip", cooldown=0)
    await on_address(registry, clock, "a", "127.0.7.1")
    await on_address(registry, clock, "b", "127.0.7.1")
    first = await leases.grant(GrantRequest(ttl=5, proxy_id="a"))
    clock.advance(6)
    assert [r.lease_id for r in await leases.expire_due()] == [first.id]
    second = await leases.grant(GrantRequest(ttl=60, proxy_id="b"))
    await registry.transition("b", Phase.UNHEALTHY, reason="probe failed")
    assert (await leases.get(second.id) or (None, ""))[1] == "revoked"
    assert (await leases.grant(GrantRequest(ttl=60, proxy_id="a"))).proxy_id == "a"
    assert await redis_client.keys("pf:egress_cool:*") == []


async def test_holds_survive_an_address_change_until_the_lease_ends(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """A lease gives back the address it was granted on, whatever its proxy reports since."""
    leases = store(redis_client, clock, "ip", cooldown=0)
    await on_address(registry, clock, "a", "127.0.8.1")
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id="a"))
    await registry.update("a", egress_ip="127.0.8.2", egress_net=network("127.0.8.2"))
    assert await redis_client.hkeys("pf:egress_held:ip:127.0.8.1") == [lease.id]
    await leases.release(lease.id, lease.epoch)
    assert await redis_client.keys("pf:egress_held:*") == []


async def test_each_provider_gets_its_own_mode_from_the_argument(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """Names that begin alike (`local`, `local-2`) are told apart; an unlisted provider
    takes the default (`ip`)."""
    modes = Exclusivity({"local-2": "ip", "local": "none", "other": "subnet"})
    leases = LeaseStore(redis_client, clock, LeasePolicy(cooldown=0), exclusivity=modes)
    for pid, provider in (("n1", "local"), ("n2", "local"), ("i1", "local-2"),
                          ("i2", "local-2"), ("d1", "unlisted"), ("d2", "unlisted")):  # fmt: skip
        await on_address(registry, clock, pid, f"127.0.9.{len(provider)}", provider=provider)
    assert (await leases.grant(GrantRequest(ttl=60, proxy_id="n1"))).proxy_id == "n1"
    assert (await leases.grant(GrantRequest(ttl=60, proxy_id="n2"))).proxy_id == "n2"
    for first, second in (("i1", "i2"), ("d1", "d2")):
        await leases.grant(GrantRequest(ttl=60, proxy_id=first))
        with pytest.raises(Conflict, match="held by another lease"):
            await leases.grant(GrantRequest(ttl=60, proxy_id=second))


async def test_a_proxy_skipped_for_its_address_goes_to_the_back_of_the_queue(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    """Behind every free proxy while its address is held (LRU by address); until the
    address's cooldown ends while it cools, so later grants do not examine it again."""
    leases = store(redis_client, clock, "ip")
    for pid, ip in (("a", "127.0.1.1"), ("b", "127.0.1.1"), ("c", "127.0.1.3")):
        await on_address(registry, clock, pid, ip)
        clock.advance(1)  # LRU order: a, b, c
    a = await leases.grant(GrantRequest(ttl=60))
    assert a.proxy_id == "a"
    assert (await leases.grant(GrantRequest(ttl=60))).proxy_id == "c"
    assert await redis_client.zscore("pf:avail", "b") == clock.now()
    await leases.release(a.id, a.epoch)
    with pytest.raises(Unavailable) as none:  # a cools down, and b with a's address
        await leases.grant(GrantRequest(ttl=60))
    assert none.value.retry_after == pytest.approx(COOLDOWN)
    assert await redis_client.zscore("pf:avail", "b") == clock.now() + COOLDOWN
    assert await redis_client.zscore("pf:avail:local:zone-a", "b") == clock.now() + COOLDOWN
