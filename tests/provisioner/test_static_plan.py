"""The static provider's sync plan (pure.plan): added, drained then forgotten, kept and
updated, the empty guard, max_proxies, and proxies that are not the plan's."""

from __future__ import annotations

import pytest

from proxyfleet.common.wire.models import Phase, Proxy, Scheme, Withheld
from proxyfleet.provisioner_static.pure.lines import ProxyLine, entry_id
from proxyfleet.provisioner_static.pure.plan import (
    Desired,
    Held,
    SourceLoad,
    empty_guard_trips,
    plan_sync,
)

P = "st"


def want(n: int, source: str = "f", password: str = "pw", zone: str = "z") -> Desired:  # noqa: S107
    line = ProxyLine(Scheme.HTTP, f"127.0.0.{n}", 3128, "u", password)
    return Desired(entry_id(P, line), source, line, zone)


def have(d: Desired, phase: Phase = Phase.READY, **fields: object) -> Proxy:
    proxy = Proxy(
        id=d.id, provider=P, zone=d.zone, phase=phase, gen=3, username=d.line.username,
        password=d.line.password, created_at=1.0, updated_at=1.0, placement=d.placement(),
        scheme=d.line.scheme, external=True,
    )  # fmt: skip
    for k, v in fields.items():
        setattr(proxy, k, v)
    return proxy


def test_new_entries_are_added_and_unchanged_ones_kept() -> None:
    a, b, c = want(1), want(2), want(3)
    p = plan_sync([SourceLoad("f", [a, b, c], guarded=True)], [have(a)], max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert p.add == [b, c]
    assert (p.drain, p.delete, p.update, p.held) == ([], [], [], [])


def test_a_dropped_entry_is_drained_then_forgotten_once_unleased() -> None:
    a, b, c = want(1), want(2), want(3)
    leased = have(b, lease_id="l1")
    p = plan_sync([SourceLoad("f", [a, c])], [have(a), leased, have(c)], max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert (p.drain, p.delete) == ([b.id], [])
    draining = have(b, lease_id="l1", withheld=Withheld.DRAINING)
    p = plan_sync([SourceLoad("f", [a, c])], [have(a), draining, have(c)], max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert (p.drain, p.delete) == ([], [])  # its lease runs to its end
    ended = have(b, withheld=Withheld.DRAINING)
    p = plan_sync([SourceLoad("f", [a, c])], [have(a), ended, have(c)], max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert (p.drain, p.delete) == ([], [b.id])


def test_an_unleased_dropped_entry_is_drained_and_forgotten_in_one_pass() -> None:
    a, b = want(1), want(2)
    p = plan_sync([SourceLoad("f", [a])], [have(a), have(b, phase=Phase.FAILED)],
                  max_proxies=None, empty_guard=50.0)  # fmt: skip
    assert (p.drain, p.delete) == ([b.id], [b.id])


def test_a_changed_password_labels_or_zone_update_the_kept_proxy() -> None:
    a = want(1)
    changed = Desired(a.id, "f", ProxyLine(Scheme.HTTP, a.line.host, 3128, "u", "new"), "y",
                      {"tier": "gold"})  # fmt: skip
    p = plan_sync([SourceLoad("f", [changed])], [have(a)], max_proxies=None, empty_guard=50.0)
    assert p.update == [(a.id, {"password": "new", "labels": {"tier": "gold"}, "zone": "y"})]
    assert (p.add, p.drain) == ([], [])


def test_a_source_not_loaded_yet_keeps_its_proxies() -> None:
    a = want(1)
    p = plan_sync([SourceLoad("f", None, guarded=True)], [have(a)], max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert (p.add, p.drain, p.delete) == ([], [], [])


@pytest.mark.parametrize(
    ("had", "removed", "listed", "guard", "trips"),
    [
        (10, 10, 0, 50, True),  # suddenly lists nothing
        (1, 1, 0, 50, True),
        (10, 6, 4, 50, True),  # more than half removed
        (10, 5, 5, 50, False),  # exactly half: allowed
        (3, 1, 2, 10, False),  # one removal is always allowed
        (3, 2, 1, 50, True),
        (10, 10, 0, 100, False),  # 100: no guard
        (0, 0, 0, 50, False),  # nothing to lose
        (10, 3, 50, 20, True),  # additions do not hide removals
    ],
)
def test_the_empty_guard(had: int, removed: int, listed: int, guard: float, trips: bool) -> None:
    assert empty_guard_trips(had, removed, listed, guard) is trips


def test_a_load_the_guard_refuses_changes_nothing_of_its_source() -> None:
    entries = [want(i) for i in range(1, 5)]
    proxies = [have(d) for d in entries]
    new = want(9)
    p = plan_sync([SourceLoad("f", [new], guarded=True)], proxies, max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert p.held == [Held("f", 4, 4)]
    assert (p.add, p.drain, p.delete) == ([], [], [])
    # the inline list and the API are deliberate: not guarded
    p = plan_sync([SourceLoad("f", [new])], proxies, max_proxies=None, empty_guard=50.0)
    assert (len(p.drain), p.add, p.held) == (4, [new], [])


def test_entries_past_max_proxies_are_reported_not_registered() -> None:
    a, b, c, d = want(1), want(2), want(3), want(4)
    failed = have(want(8), phase=Phase.FAILED)  # does not count, as in the store
    others = [have(a), failed]
    p = plan_sync([SourceLoad("f", [a, b, c, d])], others, max_proxies=3, empty_guard=50.0)
    assert (p.add, p.over_max) == ([b, c], [d])


def test_an_entry_listed_by_two_sources_is_the_first_ones() -> None:
    a = want(1, source="inline")
    again = want(1, source="f")
    p = plan_sync([SourceLoad("inline", [a]), SourceLoad("f", [again])], [], max_proxies=None,
                  empty_guard=50.0)  # fmt: skip
    assert (p.add, p.duplicates) == ([a], [again])


def test_proxies_without_a_source_are_not_the_plans() -> None:
    minted = have(want(1), phase=Phase.READY)
    minted.placement = {}  # a vendor session a pool created
    p = plan_sync([SourceLoad("f", [])], [minted], max_proxies=None, empty_guard=50.0)
    assert (p.drain, p.delete) == ([], [])


def test_an_entry_listed_again_while_its_proxy_drains_waits() -> None:
    a = want(1)
    draining = have(a, withheld=Withheld.DRAINING, lease_id="l1")
    p = plan_sync([SourceLoad("f", [a])], [draining], max_proxies=None, empty_guard=50.0)
    assert (p.add, p.stuck, p.delete) == ([], [a], [])
    deleting = have(a, phase=Phase.DELETING)
    p = plan_sync([SourceLoad("f", [a])], [deleting], max_proxies=None, empty_guard=50.0)
    assert (p.add, p.stuck, p.delete) == ([], [a], [])
