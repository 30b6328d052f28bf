"""The pool controller's plan, a pure function: replace, recycle, scale, quarantine, delete,
spread over providers and zones; and a simulated recycle that never drops below size."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxyfleet.common.domain.pool_spec import AutoQuarantine, Autoscale, PoolSpec
from proxyfleet.common.wire.models import Phase, Withheld
from proxyfleet.pools.autoscale import scale
from proxyfleet.pools.plan import age_limit, plan
from proxyfleet.pools.spread import pause_until
from proxyfleet.pools.view import Create, Delete, Drain, Member, PoolView, ProviderRoom, Quarantine

NOW = 100_000.0
LOCAL = ProviderRoom("local", 1, ("a", "b"))


def member(i: int, phase: Phase = Phase.READY, **kw: object) -> Member:
    fields: dict[str, object] = {
        "id": f"m{i}", "provider": "local", "zone": "ab"[i % 2], "phase": phase,
        "created_at": NOW - 60, "updated_at": NOW - 60, "leased": False, "avail_at": 0.0,
    }  # fmt: skip
    return Member(**{**fields, **kw})  # type: ignore[arg-type]


def view(spec: PoolSpec, members: list[Member], **kw: object) -> PoolView:
    fields: dict[str, object] = {
        "name": "eu", "spec": spec, "gen": 1, "desired": spec.start_size(), "deleting": False,
        "members": members, "providers": [LOCAL], "now": NOW,
    }  # fmt: skip
    return PoolView(**{**fields, **kw})  # type: ignore[arg-type]


def test_a_new_pool_creates_its_size_spread_over_zones() -> None:
    p = plan(view(PoolSpec(provider="local", size=3), []))
    assert p.creates == [Create("local", "a"), Create("local", "b"), Create("local", "a")]
    assert (p.status.ready, p.status.desired, p.drains, p.deletes) == (0, 3, [], [])
    ready = {c.type: c.status for c in p.status.conditions}["Ready"]
    assert ready is False


def test_a_full_pool_does_nothing_and_says_so() -> None:
    members = [member(i) for i in range(3)]
    p = plan(view(PoolSpec(provider="local", size=3), members))
    assert (p.creates, p.drains, p.deletes) == ([], [], [])
    assert (p.status.ready, p.status.free, p.status.surge) == (3, 3, 0)
    assert p.status.oldest_age == 60
    assert {c.type: c.status for c in p.status.conditions}["Ready"] is True


def test_failed_and_deleted_members_are_replaced() -> None:
    members = [member(0), member(1, Phase.FAILED), member(2, Phase.DELETING), member(3)]
    p = plan(view(PoolSpec(provider="local", size=3), members))
    assert len(p.creates) == 1


def test_a_member_unhealthy_too_long_is_deleted_and_replaced() -> None:
    spec = PoolSpec(provider="local", size=2, replace_unhealthy_after=30)
    sick = member(1, Phase.UNHEALTHY, updated_at=NOW - 31)
    recent = member(2, Phase.UNHEALTHY, updated_at=NOW - 5)
    p = plan(view(spec, [member(0), sick, recent]))
    assert p.deletes == [Delete("m1", "unhealthy for 30 s")]
    assert p.creates == []  # m0 and the recently unhealthy m2 still count
    p = plan(view(spec, [member(0), sick]))
    assert len(p.creates) == 1


def test_recycle_creates_first_then_drains_free_members_first() -> None:
    spec = PoolSpec(provider="local", size=3, max_age=3600, max_surge=1)
    old = [member(i, created_at=NOW - 4000) for i in range(3)]
    p = plan(view(spec, old))
    assert (len(p.creates), p.drains, p.deletes) == (1, [], [])  # ready stays at 3
    assert p.recycling_began == "3 members past max_age 3600 s"
    busy = dataclasses.replace(old[0], leased=True)
    p = plan(view(spec, [busy, *old[1:], member(9)]))  # the replacement is ready
    assert (p.creates, p.drains) == ([], [])
    assert p.deletes == [Delete("m1", "recycled")]  # free first; nothing holds it
    p = plan(view(spec, [busy, member(2, created_at=NOW - 4000), member(9), member(8)]))
    assert p.drains == [Drain("m2", "recycled")] or p.deletes == [Delete("m2", "recycled")]


def test_max_unavailable_drains_before_the_replacement() -> None:
    spec = PoolSpec(provider="local", size=2, max_age=60, max_surge=0, max_unavailable=1)
    old = [member(i, created_at=NOW - 100, leased=True) for i in range(2)]
    p = plan(view(spec, old))
    assert p.drains == [Drain("m0", "recycled")]
    assert p.creates == []  # no surge: the replacement comes once m0 is out of rotation


def test_draining_members_go_when_free_or_past_the_timeout() -> None:
    spec = PoolSpec(provider="local", size=1, drain_timeout=600)
    draining = Withheld.DRAINING
    free = member(1, withheld=draining, withheld_at=NOW - 10)
    held = member(2, withheld=draining, withheld_at=NOW - 10, leased=True)
    late = member(3, withheld=draining, withheld_at=NOW - 601, leased=True)
    p = plan(view(spec, [member(0), free, held, late]))
    assert p.deletes == [Delete("m1", "drained"), Delete("m3", "drain timeout 600 s", leased=True)]
    assert (p.status.draining, p.status.leased, p.status.surge) == (3, 2, 3)


def test_scale_down_retires_the_not_ready_then_the_free_and_drains_the_leased() -> None:
    spec = PoolSpec(provider="local", size=2)
    members = [member(0, leased=True), member(1), member(2, Phase.BOOTING), member(3, leased=True)]
    members = [dataclasses.replace(m, created_at=NOW - 60 + i) for i, m in enumerate(members)]
    p = plan(view(PoolSpec(provider="local", size=3), members))
    assert (p.deletes, p.drains) == ([Delete("m2", "scaled down")], [])  # one too many
    p = plan(view(spec, members))
    assert (p.deletes, p.drains) == ([Delete("m2", "scaled down"), Delete("m1", "scaled down")], [])
    p = plan(view(PoolSpec(provider="local", size=1), members))
    assert p.deletes == [Delete("m2", "scaled down"), Delete("m1", "scaled down")]
    assert p.drains == [Drain("m0", "scaled down")]


def test_a_pool_being_deleted_retires_everything_then_goes() -> None:
    spec = PoolSpec(provider="local", size=3)
    members = [member(0), member(1, leased=True), member(2, withheld=Withheld.QUARANTINED)]
    p = plan(view(spec, members, deleting=True))
    assert p.creates == []
    assert p.drains == [Drain("m1", "pool deleted")]
    assert p.deletes == [Delete("m0", "pool deleted"), Delete("m2", "pool deleted")]
    assert not p.remove
    assert plan(view(spec, [], deleting=True)).remove


def test_a_member_blocked_by_enough_targets_is_quarantined_and_replaced() -> None:
    spec = PoolSpec(provider="local", size=2, quarantine=AutoQuarantine(blocked_targets=2))
    blocked = member(1, blocked_by=frozenset({"a.example", "b.example"}))
    p = plan(view(spec, [member(0, blocked_by=frozenset({"a.example"})), blocked]))
    assert p.quarantines == [Quarantine("m1", "blocked by 2 targets within 600 s: "
                                               "a.example, b.example")]  # fmt: skip
    assert (len(p.creates), p.status.quarantined) == (1, 1)
    kept = plan(view(spec, [member(0), member(1, withheld=Withheld.QUARANTINED)]))
    assert (len(kept.creates), kept.deletes, kept.status.quarantined) == (1, [], 1)


def test_weights_fallbacks_and_a_full_provider() -> None:
    spot = ProviderRoom("spot", 3, ("a",))
    std = ProviderRoom("std", 1, ("a",))
    spec = PoolSpec(provider="spot", size=8)
    p = plan(view(spec, [], providers=[spot, std]))
    assert [c.provider for c in p.creates].count("spot") == 6
    full = dataclasses.replace(spot, room=2, max_proxies=10)
    fallback = dataclasses.replace(std, weight=0)
    p = plan(view(spec, [], providers=[full, fallback]))
    assert [c.provider for c in p.creates] == ["spot", "spot"] + ["std"] * 6
    capped = dataclasses.replace(fallback, room=1, max_proxies=5)
    p = plan(view(spec, [], providers=[full, capped]))
    assert len(p.creates) == 3
    capacity = next(c for c in p.changed if c.type == "CapacityExceeded")
    assert capacity.status
    assert "5 members could not be created" in capacity.message
    assert "spot: at its max_proxies (10)" in capacity.message


def test_a_failing_provider_is_paused() -> None:
    assert pause_until([NOW - 5, NOW - 4], NOW) == 0.0
    assert pause_until([NOW - 5, NOW - 4, NOW - 3], NOW) == NOW + 7
    assert pause_until([NOW - 500, NOW - 4, NOW - 3], NOW) == 0.0  # one is too old
    assert pause_until([NOW - 9, NOW - 8, NOW - 7, NOW - 6], NOW) == NOW + 14
    paused = ProviderRoom("local", 1, ("a",), failing_until=NOW + 7, failing_reason="quota")
    p = plan(view(PoolSpec(provider="local", size=1), [], providers=[paused]))
    assert p.creates == []
    assert "paused 7 s after failures (quota)" in p.status.conditions[-1].message


def test_conditions_keep_their_since_until_they_change() -> None:
    spec = PoolSpec(provider="local", size=1)
    first = plan(view(spec, [member(0, Phase.BOOTING)]))
    assert first.changed == []  # a new pool reports only what is wrong from the start
    second = plan(view(spec, [member(0)], now=NOW + 5, previous=first.status))
    ready = next(c for c in second.status.conditions if c.type == "Ready")
    assert (ready.status, ready.since) == (True, NOW + 5)
    assert [c.type for c in second.changed] == ["Ready", "Progressing"]
    third = plan(view(spec, [member(0)], now=NOW + 9, previous=second.status))
    assert (third.changed, third.status.conditions[0].since) == ([], NOW + 5)


def test_age_limits_spread_a_batch_over_a_tenth_of_max_age() -> None:
    spec = PoolSpec(provider="local", size=1, max_age=1000)
    limits = [age_limit(spec, f"p{i}") or 0 for i in range(200)]
    assert 900 <= min(limits) < 920
    assert 980 < max(limits) <= 1000
    assert age_limit(PoolSpec(provider="local", size=1), "p1") is None


AUTO = Autoscale(min=1, max=5, target_free=1, scale_up_after=10, scale_down_after=60)


def test_autoscale_steps_up_on_refusals_and_on_a_lasting_shortage() -> None:
    up = scale(AUTO, 2, free=0, starting=0, refused=3, low_since=0, high_since=0, now=NOW)
    assert (up.desired, up.decision and up.decision.action) == (3, "scale_up")
    assert "3 grants refused" in (up.decision or pytest.fail("no decision")).reason
    wait = scale(AUTO, 2, free=0, starting=1, refused=3, low_since=0, high_since=0, now=NOW)
    assert (wait.desired, wait.inputs.low_since) == (2, 0)  # one is starting: it will do
    short = scale(AUTO, 2, free=0, starting=0, refused=0, low_since=NOW - 5, high_since=0,
                  now=NOW)  # fmt: skip
    assert (short.desired, short.inputs.low_since) == (2, NOW - 5)
    later = scale(AUTO, 2, free=0, starting=0, refused=0, low_since=NOW - 10, high_since=0,
                  now=NOW)  # fmt: skip
    assert (later.desired, later.inputs.low_since) == (3, NOW)
    top = scale(AUTO, 5, free=0, starting=0, refused=9, low_since=0, high_since=0, now=NOW)
    assert (top.desired, top.decision) == (5, None)


def test_autoscale_steps_down_after_a_lasting_excess_within_bounds() -> None:
    idle = scale(AUTO, 4, free=4, starting=0, refused=0, low_since=0, high_since=0, now=NOW)
    assert (idle.desired, idle.inputs.high_since) == (4, NOW)
    down = scale(AUTO, 4, free=4, starting=0, refused=0, low_since=0, high_since=NOW - 60,
                 now=NOW)  # fmt: skip
    assert (down.desired, down.decision and down.decision.action) == (3, "scale_down")
    floor = scale(AUTO, 1, free=1, starting=0, refused=0, low_since=0, high_since=0, now=NOW)
    assert floor.desired == 1
    clamp = scale(AUTO, 9, free=0, starting=0, refused=0, low_since=0, high_since=0, now=NOW)
    assert (clamp.desired, clamp.decision and clamp.decision.reason) == (
        5, "desired 9 outside autoscale [1, 5]",
    )  # fmt: skip


def test_a_plan_stays_linear_when_thousands_are_past_max_age() -> None:
    """A batch of 20,000 members aging together: planned at once, not compared pairwise (a
    pass that took minutes would lose its pool's lock every time)."""
    spec = PoolSpec(provider="local", size=20_000, max_age=3600, max_surge=100)
    members = [member(i, created_at=NOW - 4000) for i in range(20_000)]
    started = time.process_time()
    p = plan(view(spec, members))
    assert time.process_time() - started < 5  # ~0.1 s; pairwise it was about 90 s
    assert (len(p.creates), p.drains) == (100, [])


def test_the_status_shows_the_last_scaling_decision_until_the_next() -> None:
    spec = PoolSpec(provider="local", autoscale=AUTO)
    busy = [member(0, leased=True), member(1, leased=True)]
    p = plan(view(spec, busy, desired=2, refused=2))
    assert p.scaled is not None
    assert p.status.last_decision == p.scaled
    assert "2 grants refused" in p.status.last_decision.reason
    later = plan(view(spec, [*busy, member(2, Phase.BOOTING)], desired=3, previous=p.status))
    assert later.scaled is None
    assert later.status.last_decision == p.scaled
    assert plan(view(spec, busy, desired=2)).status.last_decision is None


def simulate_recycle(size: int, surge: int, unavailable: int, leased: set[int]) -> list[int]:
    """Passes of a whole recycle, each plan carried out at once and every create ready by
    the next pass; a leased member's lease ends one pass after its drain. Returns the ready
    members in rotation at each pass."""
    spec = PoolSpec(provider="local", size=size, max_age=3600, max_surge=surge,
                    max_unavailable=unavailable)  # fmt: skip
    members = {f"m{i}": member(i, created_at=NOW - 4000, leased=i in leased) for i in range(size)}
    seen, made = [], 0
    for step in range(10 * size + 10):
        now = NOW + step
        p = plan(view(spec, list(members.values()), now=now))
        seen.append(sum(1 for m in members.values()
                        if m.phase is Phase.READY and m.withheld is Withheld.NO))  # fmt: skip
        if not (p.creates or p.drains or p.deletes) and all(
            now - m.created_at < 3000 for m in members.values()
        ):
            return seen
        for m in members.values():  # drained last pass: the lease has ended since
            if m.withheld is Withheld.DRAINING:
                members[m.id] = dataclasses.replace(m, leased=False)
        for gone in p.deletes:
            del members[gone.proxy_id]
        for drain in p.drains:
            m = members[drain.proxy_id]
            members[m.id] = dataclasses.replace(m, withheld=Withheld.DRAINING, withheld_at=now)
        for c in p.creates:
            made += 1
            members[f"n{made}"] = member(made, id=f"n{made}", zone=c.zone, created_at=now)
    raise AssertionError(f"no end of the recycle after {len(seen)} passes: {seen}")


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 12),
    surge=st.integers(1, 4),
    leased=st.sets(st.integers(0, 11), max_size=6),
)
def test_a_recycle_never_leaves_fewer_ready_than_size(
    size: int, surge: int, leased: set[int]
) -> None:
    seen = simulate_recycle(size, surge, 0, leased)
    assert min(seen) >= size, seen


@pytest.mark.parametrize("unavailable", [1, 2])
def test_max_unavailable_bounds_the_dip(unavailable: int) -> None:
    seen = simulate_recycle(6, 0, unavailable, set())
    assert min(seen) == 6 - unavailable
