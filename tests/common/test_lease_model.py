"""Model-based test of the lease store on real Redis: hypothesis drives random sequences of
grants, releases, reports, renewals, expiries, health flips (which revoke a lease) and clock
moves, and every answer is checked against a plain-Python model of the rules in the brief
(section 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict, Unavailable
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry, connect_redis
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import LeaseOutcome, Phase

T = TypeVar("T")
PROXIES = ["p0", "p1", "p2"]
TARGETS = ["", "a.example", "b.example"]
COOLDOWN, BAN, MAX_TTL = 5.0, 20.0, 30.0


@dataclass
class ModelLease:
    id: str
    proxy: str
    epoch: int
    expires: float
    target: str


class LeaseRules(RuleBasedStateMachine):
    redis_url = ""

    @initialize()
    def setup(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self.client: aioredis.Redis = connect_redis(self.redis_url)
        self.run(self.client.flushdb())
        self.registry = ProxyRegistry(self.client, self.clock)
        self.store = LeaseStore(
            self.client,
            self.clock,
            LeasePolicy(cooldown=COOLDOWN, max_ttl=MAX_TTL, ban_seconds=BAN),
        )
        for pid in PROXIES:
            self.run(make_ready(self.registry, make_proxy(pid, self.clock)))
        self.ready = set(PROXIES)
        self.active: dict[str, ModelLease] = {}  # proxy -> lease
        self.avail_at = dict.fromkeys(PROXIES, 0.0)
        self.bans: dict[tuple[str, str], float] = {}
        self.ended: list[ModelLease] = []

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        if hasattr(self, "loop"):
            self.run(self.client.aclose())
            self.loop.close()

    def grantable(self, pid: str, target: str) -> bool:
        now = self.clock.now()
        return (
            pid in self.ready
            and pid not in self.active
            and self.avail_at[pid] <= now
            and self.bans.get((pid, target), 0.0) <= now
        )

    @rule(dest=st.sampled_from(TARGETS), ttl=st.floats(1, 60))
    def grant_any(self, dest: str, ttl: float) -> None:
        target = dest
        expected = {p for p in PROXIES if self.grantable(p, target)}
        try:
            lease = self.run(self.store.grant(GrantRequest(ttl=ttl, target=target)))
        except Unavailable:
            assert not expected
            return
        assert lease.proxy_id in expected
        self.active[lease.proxy_id] = ModelLease(
            lease.id, lease.proxy_id, lease.epoch, self.clock.now() + min(ttl, MAX_TTL), target
        )

    @rule(pid=st.sampled_from(PROXIES), dest=st.sampled_from(TARGETS))
    def grant_specific(self, pid: str, dest: str) -> None:
        request = GrantRequest(ttl=10, proxy_id=pid, target=dest)
        if not self.grantable(pid, dest):
            with pytest.raises(Conflict) as refused:
                self.run(self.store.grant(request))
            assert refused.value.retry_after is not None
            assert refused.value.retry_after > 0
            return
        lease = self.run(self.store.grant(request))
        self.active[pid] = ModelLease(lease.id, pid, lease.epoch, self.clock.now() + 10, dest)

    @precondition(lambda self: self.active)
    @rule(data=st.data(), stale=st.booleans())
    def release(self, data: st.DataObject, stale: bool) -> None:
        lease = data.draw(st.sampled_from(sorted(self.active.values(), key=lambda x: x.proxy)))
        if stale:
            with pytest.raises(Conflict):
                self.run(self.store.release(lease.id, lease.epoch - 1))
            return
        self.run(self.store.release(lease.id, lease.epoch))
        del self.active[lease.proxy]
        self.avail_at[lease.proxy] = self.clock.now() + COOLDOWN
        self.ended.append(lease)

    @precondition(lambda self: self.active)
    @rule(
        data=st.data(), outcome=st.sampled_from(list(LeaseOutcome)), dest=st.sampled_from(TARGETS)
    )
    def report(self, data: st.DataObject, outcome: LeaseOutcome, dest: str) -> None:
        lease = data.draw(st.sampled_from(sorted(self.active.values(), key=lambda x: x.proxy)))
        self.run(self.store.report(lease.id, lease.epoch, outcome, dest))
        applied = dest or lease.target  # no target given: the lease's own
        if outcome is LeaseOutcome.BLOCKED and applied:
            self.bans[(lease.proxy, applied)] = self.clock.now() + BAN

    @precondition(lambda self: self.ended)
    @rule(data=st.data())
    def ended_leases_conflict(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(sorted(self.ended, key=lambda x: (x.proxy, x.epoch))))
        with pytest.raises(Conflict):
            self.run(self.store.release(lease.id, lease.epoch))
        with pytest.raises(Conflict):
            self.run(self.store.renew(lease.id, lease.epoch, 10))

    @rule(seconds=st.floats(0.5, 25))
    def time_passes_and_sweeper_runs(self, seconds: float) -> None:
        self.clock.advance(seconds)
        now = self.clock.now()
        released = {r.lease_id for r in self.run(self.store.expire_due())}
        due = {m.id for m in self.active.values() if m.expires <= now}
        assert released == due
        for pid, m in list(self.active.items()):
            if m.id in due:
                del self.active[pid]
                self.avail_at[pid] = now + COOLDOWN
                self.ended.append(m)

    @rule(pid=st.sampled_from(PROXIES))
    def health_flips(self, pid: str) -> None:
        if pid in self.ready:
            self.run(self.registry.transition(pid, Phase.UNHEALTHY))
            self.ready.discard(pid)
            revoked = self.active.pop(pid, None)  # its lease ends with it, no cooldown
            if revoked is not None:
                self.avail_at[pid] = self.clock.now()
                self.ended.append(revoked)
        else:
            self.run(self.registry.transition(pid, Phase.READY))
            self.ready.add(pid)

    @invariant()
    def one_holder_per_proxy(self) -> None:
        if not hasattr(self, "loop"):
            return
        for pid in PROXIES:
            proxy = self.run(self.registry.get(pid))
            assert proxy is not None
            model = self.active.get(pid)
            assert proxy.lease_id == (model.id if model else "")


def test_lease_store_follows_the_rules(redis_url: str) -> None:
    LeaseRules.redis_url = redis_url
    runner = LeaseRules.TestCase
    runner.settings = settings(
        max_examples=60,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    runner().runTest()
