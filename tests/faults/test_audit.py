"""The fault suite's audit on hand-made histories: clean ones pass, broken ones fail."""

from __future__ import annotations

from redis.sentinel import SentinelConnectionPool
from tests.faults.audit import (
    Finding,
    Lease,
    Request,
    StreamEvent,
    check_client_holds,
    check_dead_grants,
    check_lease_events,
    check_leases,
    check_lifecycle,
    check_no_server_errors,
    check_resources,
    check_stream_holds,
    check_stream_once,
    check_write_latency,
    load_figures,
)
from tests.faults.report import Row, render
from tests.faults.scenarios import first_grant_after
from tests.faults.sentinel_stores import sync_client


def lease(i: str, proxy: str, epoch: int, t0: float, t1: float | None, status: int = 200) -> Lease:
    return Lease(i, proxy, epoch, t0, t0 + 30, t1, status if t1 is not None else None)


def ev(i: str, kind: str, t: float, proxy: str, lease_id: str = "", **kw: float) -> StreamEvent:
    epoch, gen, expires = kw.get("epoch"), kw.get("gen"), kw.get("expires_at")
    return StreamEvent(
        i,
        kind,
        t,
        proxy,
        lease_id,
        None if epoch is None else int(epoch),
        None if gen is None else int(gen),
        expires,
    )


def test_leases_in_their_final_state_pass() -> None:
    leases = [lease("l1", "p1", 1, 0, 1), lease("l2", "p1", 2, 2, None)]
    v = check_leases(leases, {"l1": "released", "l2": "expired"}, now=100)
    assert v.findings == []
    assert v.lost_with_redis == 0


def test_a_lease_missing_or_in_the_wrong_state_fails() -> None:
    leases = [lease("l1", "p1", 1, 0, 1), lease("l2", "p2", 1, 0, 1), lease("l3", "p3", 1, 0, None)]
    v = check_leases(leases, {"l1": None, "l2": "active", "l3": "active"}, now=100)
    assert v.by_check() == {"lease_lost": 1, "lease_state": 2}


def test_leases_lost_with_an_unpersisted_redis_are_accounted_not_hidden() -> None:
    before, after = lease("l1", "p1", 1, 5, 6), lease("l2", "p1", 1, 20, 21)
    v = check_leases([before, after], {"l1": None, "l2": None}, now=100, redis_reset_at=10)
    assert v.lost_with_redis == 1
    assert [f.detail.split(":")[0] for f in v.findings] == ["l2"]  # after the reset: lost


def test_consecutive_holds_pass_and_overlapping_ones_fail() -> None:
    fine = [lease("a", "p1", 1, 0, 1.0), lease("b", "p1", 2, 1.0, 2), lease("c", "p2", 1, 0, 5)]
    assert check_client_holds(fine) == []
    double = [*fine, lease("d", "p1", 3, 1.5, 3)]
    found = check_client_holds(double)
    assert [f.check for f in found] == ["double_hold"]
    assert "b and d" in found[0].detail


def test_a_lease_never_released_holds_until_its_expiry() -> None:
    held = [lease("a", "p1", 1, 0, None), lease("b", "p1", 2, 10, 11)]
    assert [f.check for f in check_client_holds(held)] == ["double_hold"]


def test_a_release_without_answer_ends_the_hold_when_sent() -> None:
    # The API died with the release in flight: the client had let go when it sent it.
    held = [lease("a", "p1", 1, 0, 1, status=0), lease("b", "p1", 2, 2, 3)]
    assert check_client_holds(held) == []


def test_a_lease_lost_with_the_store_holds_until_its_expiry_on_the_stream() -> None:
    """No end event (an unpersisted Redis lost it): the hold ends at its expiry, so a grant
    after it is fine and one before it is a double hold."""
    lost = ev("1", "lease.granted", 0, "p1", "a", epoch=1, expires_at=10)
    after = ev("2", "lease.granted", 11, "p1", "b", epoch=2, expires_at=21)
    before = ev("3", "lease.granted", 9, "p1", "c", epoch=3, expires_at=19)
    assert check_stream_holds([lost, after]) == []
    assert [f.check for f in check_stream_holds([lost, before])] == ["double_hold"]
    renewed = ev("4", "lease.renewed", 5, "p1", "a", epoch=1)
    assert [f.check for f in check_stream_holds([lost, renewed, after])] == ["double_hold"]


def test_stream_holds_and_epochs() -> None:
    good = [
        ev("1", "lease.granted", 1, "p1", "a", epoch=1),
        ev("2", "lease.released", 2, "p1", "a", epoch=1),
        ev("3", "lease.granted", 2, "p1", "b", epoch=2),
        ev("4", "lease.expired", 9, "p1", "b", epoch=2),
    ]
    assert check_stream_holds(good) == []
    overlap = [*good, ev("5", "lease.granted", 5, "p1", "c", epoch=3)]
    assert [f.check for f in check_stream_holds(overlap)] == ["double_hold"]
    reused = [*good, ev("5", "lease.granted", 10, "p1", "c", epoch=1)]  # after a Redis reset
    assert [f.check for f in check_stream_holds(reused)] == ["epoch_reused"]


def test_each_event_once() -> None:
    events = [ev("1", "lease.granted", 1, "p1"), ev("2", "lease.released", 2, "p1")]
    assert check_stream_once(events) == []
    found = check_stream_once([*events, events[0]])
    assert [(f.check, f.detail) for f in found] == [("event_duplicate", "1: 2 times")]


def test_lease_events_present_pass_and_missing_fail() -> None:
    leases = [lease("a", "p1", 1, 0, 1), lease("b", "p2", 4, 0, 1, status=0)]
    events = [
        ev("1", "lease.granted", 0, "p1", "a", epoch=1),
        ev("2", "lease.released", 1, "p1", "a", epoch=1),
        ev("3", "lease.granted", 0, "p2", "b", epoch=4),
    ]
    assert check_lease_events(leases, events) == ([], 0)  # b's release had no answer
    assert [f.check for f in check_lease_events(leases, events[1:])[0]] == ["event_lost"]
    wrong = [events[0], events[1], ev("3", "lease.granted", 0, "p2", "b", epoch=3)]
    assert [f.check for f in check_lease_events(leases, wrong)[0]] == ["event_mismatch"]


def test_lease_events_lost_with_an_unpersisted_redis_are_accounted() -> None:
    leases = [lease("a", "p1", 1, 0, 1), lease("b", "p1", 2, 20, 21)]
    # a's events were still in the outbox at the reset (t=10); b came after it.
    found, accounted = check_lease_events(leases, [], redis_reset_at=10)
    assert accounted == 2
    assert [f.detail for f in found] == ["lease.granted of b", "lease.released of b"]


def test_lifecycle_chain() -> None:
    chain = [
        ev("1", "proxy.pending", 0, "p1", gen=0),
        ev("2", "proxy.provisioning", 1, "p1", gen=1),
        ev("3", "proxy.booting", 2, "p1", gen=2),
        ev("4", "proxy.ready", 3, "p1", gen=3),
    ]
    assert check_lifecycle(chain, {"p1": 3}) == []
    # Written to Redis, never published: a gap, or a registry ahead of the stream.
    gap = [chain[0], chain[3]]
    assert [f.check for f in check_lifecycle(gap, {"p1": 3})] == ["event_lost"]
    assert "gen [1, 2]" in check_lifecycle(gap, {"p1": 3})[0].detail
    assert [f.check for f in check_lifecycle(chain, {"p1": 4})] == ["event_lost"]
    assert [f.check for f in check_lifecycle(chain[1:], {"p1": 3})] == ["event_lost"]
    assert [f.check for f in check_lifecycle([], {"p9": 0})] == ["event_lost"]


def test_resources() -> None:
    before = {"p1": 1, "p2": 1, "p3": 1}
    assert check_resources(before, {"p1": 1, "p2": 1, "p4": 1}, deleted=["p3"]) == []
    found = check_resources(before, {"p1": 2, "p3": 1})
    assert sorted(f.check for f in found) == ["duplicate_resource", "proxy_destroyed"]


def test_no_grant_of_a_dead_proxy() -> None:
    leases = [lease("a", "p1", 1, 1, 2), lease("b", "p1", 2, 6, 7), lease("c", "p2", 1, 6, 7)]
    assert check_dead_grants(leases, {"p1": (5, 9)}) == [Finding("dead_proxy_granted", "b on p1")]
    assert check_dead_grants(leases, {"p1": (10, 20)}) == []


def test_writes_answered_in_time_and_no_500() -> None:
    fast = [Request("create", 0, 0.05, 202), Request("delete", 1, 0.02, 202)]
    assert check_write_latency(fast, limit=1.0) == []
    slow = [Request("create", 0, 18.5, 202), Request("delete", 1, 0.1, 503)]
    assert len(check_write_latency(slow, limit=1.0)) == 2
    answers = [Request("grant", 0, 0.01, 503), Request("grant", 0, 0.01, 500)]
    assert [f.detail for f in check_no_server_errors(answers)] == ["grant 500 x1"]


def test_load_figures_and_table() -> None:
    reqs = [
        Request("grant", t / 10, 0.01, 201 if t % 4 else 503, "" if t % 4 else "no_proxy")
        for t in range(20)
    ]
    rps, errors, statuses = load_figures(reqs, 0, 2)
    assert rps == 10
    assert errors == 0.25
    assert statuses == {"503 no_proxy": 5}
    assert load_figures([], 0, 1) == (0.0, 0.0, {})
    row = Row("kill -9 api", rps, errors, ["api ready in 1.2s"], leases=7, statuses=statuses)
    table = render([row])
    assert (
        "| kill -9 api | 10/s, 25.0% (5x 503 no_proxy) | 7 leases, 0 events | api ready in 1.2s "
        "| nothing | pass |"
    ) in table
    row.verdict.findings.extend(check_stream_once([ev("1", "x", 0, "p"), ev("1", "x", 0, "p")]))
    assert "1 event_duplicate" in render([row])
    assert "FAIL" in render([row])


def test_the_first_grant_after_a_kill_counts_only_grants_asked_after_it() -> None:
    requests = [
        Request("grant", 9.5, 0.2, 201),  # asked before the kill
        Request("grant", 10.5, 2.0, 503, "store_unavailable"),
        Request("release", 11.0, 0.1, 200),
        Request("grant", 12.0, 1.5, 201),
        Request("grant", 13.0, 0.1, 201),
    ]
    assert first_grant_after(requests, 10.0) == "first grant 2xx 3.1s after the kill"
    assert first_grant_after(requests[:3], 10.0) == "no grant after the kill"


def test_a_sentinel_url_gives_a_client_of_the_primary_it_names() -> None:
    client = sync_client("redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/pf-primary/3")
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "pf-primary"
    assert pool.connection_kwargs["db"] == 3
    assert [
        s.connection_pool.connection_kwargs["port"] for s in pool.sentinel_manager.sentinels
    ] == [26379, 26380]
