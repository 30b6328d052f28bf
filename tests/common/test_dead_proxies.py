"""A dead proxy is not handed out, and its holder hears of it (issue 9, item 5): grants skip
proxies without a recent good probe; a proxy turning unhealthy, failing or being deleted
revokes its lease, and the lease's calls say why. Real Redis, the injected clock."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, Unavailable
from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire.events import Event, EventType
from proxyfleet.common.wire.models import LeaseOutcome, Phase

MAX_AGE = 20.0


@pytest.fixture
def fresh_leases(redis_client: aioredis.Redis, clock: ManualClock) -> LeaseStore:
    return LeaseStore(redis_client, clock, LeasePolicy(cooldown=0, max_probe_age=MAX_AGE))


async def _events(redis_client: aioredis.Redis, kind: EventType) -> list[Event]:
    entries = await Outbox(redis_client).peek()
    events = [
        event_decoder.decode(e.body) for e in entries if e.subject.startswith("proxyfleet.ev")
    ]
    return [e for e in events if e.type is kind]


async def test_a_grant_skips_a_proxy_whose_last_good_probe_is_old(
    registry: ProxyRegistry, fresh_leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("old", clock))  # good probe at t0 (LRU first)
    clock.advance(MAX_AGE - 5)
    await make_ready(registry, make_proxy("new", clock))
    clock.advance(6)  # "old" last answered MAX_AGE + 1 ago, "new" 6 s ago
    lease = await fresh_leases.grant(GrantRequest(ttl=60))
    assert lease.proxy_id == "new"
    await fresh_leases.release(lease.id, lease.epoch)

    with pytest.raises(Conflict) as refused:  # named: refused with the reason
        await fresh_leases.grant(GrantRequest(ttl=60, proxy_id="old"))
    assert refused.value.code == "probe_stale"
    assert "no good probe in the last 20 s" in str(refused.value)
    assert refused.value.retry_after == 1.0

    await registry.update("old", last_ok_at=clock.now())  # health probed it again
    assert (await fresh_leases.grant(GrantRequest(ttl=60, proxy_id="old"))).proxy_id == "old"


async def test_when_every_proxy_is_stale_the_answer_says_so(
    registry: ProxyRegistry, fresh_leases: LeaseStore, clock: ManualClock
) -> None:
    for i in range(3):
        await make_ready(registry, make_proxy(f"p{i}", clock))
    clock.advance(MAX_AGE + 0.001)  # health stopped
    with pytest.raises(Unavailable) as nothing:
        await fresh_leases.grant(GrantRequest(ttl=60))
    assert nothing.value.code == "probe_stale"
    assert "3 skipped with no good probe in the last 20 s" in str(nothing.value)
    assert "health" in str(nothing.value)


async def test_busy_is_not_reported_as_stale(
    registry: ProxyRegistry, fresh_leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await fresh_leases.grant(GrantRequest(ttl=60))
    with pytest.raises(Unavailable) as nothing:
        await fresh_leases.grant(GrantRequest(ttl=60))
    assert nothing.value.code == "unavailable"


async def test_a_proxy_never_probed_is_not_granted_and_zero_turns_the_check_off(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await redis_client.hdel("pf:proxy:p1", "last_ok_at")  # made ready by an older health
    checking = LeaseStore(redis_client, clock, LeasePolicy(max_probe_age=MAX_AGE))
    with pytest.raises(Unavailable):
        await checking.grant(GrantRequest(ttl=60))
    unchecked = LeaseStore(redis_client, clock, LeasePolicy(max_probe_age=0))
    assert (await unchecked.grant(GrantRequest(ttl=60))).proxy_id == "p1"


async def test_an_unhealthy_proxy_revokes_its_lease_and_the_holder_is_told_why(
    registry: ProxyRegistry,
    fresh_leases: LeaseStore,
    redis_client: aioredis.Redis,
    clock: ManualClock,
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await fresh_leases.grant(GrantRequest(ttl=60))
    moved = await registry.transition("p1", Phase.UNHEALTHY, reason="connect refused")
    assert moved.ended_lease_id == lease.id

    [revoked] = await _events(redis_client, EventType.LEASE_REVOKED)
    assert (revoked.lease_id, revoked.proxy_id) == (lease.id, "p1")
    assert revoked.data.reason == "proxy unhealthy: connect refused"
    got = await fresh_leases.get(lease.id)
    assert got is not None
    assert got[1] == "revoked"
    assert got[0].reason == "proxy unhealthy: connect refused"
    proxy = await registry.get("p1")
    assert proxy is not None
    assert proxy.lease_id == ""

    calls = (
        fresh_leases.renew(lease.id, lease.epoch, 30),
        fresh_leases.report(lease.id, lease.epoch, LeaseOutcome.OK),
        fresh_leases.release(lease.id, lease.epoch),
    )
    for call in calls:
        with pytest.raises(Conflict) as refused:
            await call
        assert refused.value.code == "lease_revoked"
        assert str(refused.value).endswith("lease revoked: proxy unhealthy: connect refused")

    await registry.transition("p1", Phase.READY)  # recovered: grantable again, at once
    await registry.update("p1", last_ok_at=clock.now())
    assert (await fresh_leases.grant(GrantRequest(ttl=60))).epoch == lease.epoch + 1


@pytest.mark.parametrize(
    ("phase", "reason", "why"),
    [
        (Phase.DELETING, "", "proxy deleted"),
        (Phase.UNHEALTHY, "", "proxy unhealthy"),
    ],
)
async def test_every_revoke_records_its_reason(
    registry: ProxyRegistry,
    fresh_leases: LeaseStore,
    clock: ManualClock,
    phase: Phase,
    reason: str,
    why: str,
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await fresh_leases.grant(GrantRequest(ttl=60))
    await registry.transition("p1", phase, reason=reason)
    got = await fresh_leases.get(lease.id)
    assert got is not None
    assert (got[1], got[0].reason) == ("revoked", why)
    with pytest.raises(Conflict, match=f"lease revoked: {why}$"):
        await fresh_leases.renew(lease.id, lease.epoch, 30)


async def test_an_expired_lease_still_answers_as_before(
    registry: ProxyRegistry, fresh_leases: LeaseStore, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    lease = await fresh_leases.grant(GrantRequest(ttl=5))
    clock.advance(6)
    await fresh_leases.expire_due()
    with pytest.raises(Conflict) as refused:
        await fresh_leases.renew(lease.id, lease.epoch, 30)
    assert refused.value.code == "conflict"
    assert "lease is expired" in str(refused.value)
