"""Which host of its zone a proxy's VM goes on (`pure.host_choice`): room, ties, hosts that
are down, every host down, and the earlier attempt's domain or pin."""

from __future__ import annotations

import pytest

from proxyfleet.provisioner_kvm.pure.host_choice import (
    Adopt,
    Answered,
    Build,
    Down,
    DownMarks,
    HostReport,
    NoHost,
    choose_host,
)


def up(name: str, *proxies: str, limit: int | None = None) -> Answered:
    return Answered(name, frozenset(proxies), limit)


def test_the_host_with_the_most_room_left_gets_the_proxy() -> None:
    reports = [up("h1", "a", "b", limit=4), up("h2", "c", limit=2), up("h3", limit=3)]
    # room: h1 2, h2 1, h3 3
    assert choose_host("p", "z", reports, {}) == Build("h3")


def test_without_limits_the_host_with_the_fewest_proxies_gets_it() -> None:
    reports = [up("h1", "a", "b"), up("h2", "c"), up("h3", "d", "e", "f")]
    assert choose_host("p", "z", reports, {}) == Build("h2")


def test_a_host_without_a_limit_has_more_room_than_any_limited_one() -> None:
    reports = [up("h1", limit=100), up("h2", "a", "b", "c")]
    assert choose_host("p", "z", reports, {}) == Build("h2")


def test_ties_go_to_the_fewest_proxies_then_the_name_whatever_the_order() -> None:
    same_room = [up("h2", "a", limit=3), up("h1", "b", "c", limit=4)]
    assert choose_host("p", "z", same_room, {}) == Build("h2")  # room 2 each; h2 runs fewer
    even = [up("hb", "a"), up("hc", "b"), up("ha", "c")]
    assert choose_host("p", "z", even, {}) == Build("ha")
    assert choose_host("p", "z", list(reversed(even)), {}) == Build("ha")


def test_creates_placed_and_not_yet_listed_count_on_their_host() -> None:
    reports = [up("h1"), up("h2", "a")]
    assert choose_host("p", "z", reports, {}) == Build("h1")
    assert choose_host("p", "z", reports, {}, {"q": "h1", "r": "h1"}) == Build("h2")
    assert choose_host("p", "z", reports, {"q": "h1", "r": "h1"}) == Build("h2")
    # The create being placed does not count against itself; a listed one counts once.
    assert choose_host("p", "z", reports, {}, {"p": "h1", "a": "h2"}) == Build("h1")


def test_a_full_host_is_skipped_and_a_full_zone_is_a_temporary_error() -> None:
    assert choose_host("p", "z", [up("h1", "a", limit=1), up("h2", "b", "c")], {}) == Build("h2")
    choice = choose_host("p", "z", [up("h1", "a", limit=1), Down("h2", "gone")], {})
    assert choice == NoHost(
        "every host of zone z that answers is full (h1 1/1); down: h2", permanent=False
    )


def test_hosts_that_are_down_get_no_share() -> None:
    reports: list[HostReport] = [
        Down("h1", "host h1 unreachable"),
        up("h2", "a", "b"),
        Down("h3", "refused"),
    ]
    for proxy in ("p1", "p2", "p3", "p4"):
        assert choose_host(proxy, "z", reports, {}) == Build("h2")


def test_every_host_down_is_a_temporary_error_naming_them() -> None:
    reports = [Down("h2", "host h2 (zone z) unreachable: refused"), Down("h1", "host h1: timeout")]
    choice = choose_host("p", "z", reports, {})
    assert isinstance(choice, NoHost)
    assert not choice.permanent
    assert choice.message == (
        "every host of zone z is down (h1, h2): host h1: timeout; "
        "host h2 (zone z) unreachable: refused"
    )


def test_every_host_down_for_good_is_a_permanent_error() -> None:
    both = [Down("h1", "host key mismatch", permanent=True), Down("h2", "bad key", True)]
    assert choose_host("p", "z", both, {}) == NoHost(
        "every host of zone z is down (h1, h2): host key mismatch; bad key", permanent=True
    )
    one = [Down("h1", "host key mismatch", permanent=True), Down("h2", "timeout")]
    choice = choose_host("p", "z", one, {})
    assert isinstance(choice, NoHost)
    assert not choice.permanent


def test_the_domain_of_an_earlier_attempt_is_adopted_wherever_it_is() -> None:
    reports: list[HostReport] = [
        up("h1", limit=10),
        up("h2", "p", "a", "b", limit=3),
        Down("h3", "x"),
    ]
    assert choose_host("p", "z", reports, {}) == Adopt("h2")
    assert choose_host("p", "z", reports, {"p": "h1"}) == Adopt("h2")
    full = [up("h1", "p", limit=1)]
    assert choose_host("p", "z", full, {}) == Adopt("h1")


def test_a_pinned_proxy_is_built_on_its_host_again_or_waits_for_it() -> None:
    reports = [up("h1", "a", "b", "c"), up("h2")]
    assert choose_host("p", "z", reports, {"p": "h1"}) == Build("h1")
    down: list[HostReport] = [Down("h1", "host h1 unreachable"), up("h2")]
    choice = choose_host("p", "z", down, {"p": "h1"})
    assert isinstance(choice, NoHost)
    assert not choice.permanent
    assert "host h1 (zone z) may hold this proxy's domain" in choice.message
    assert "host h1 unreachable" in choice.message
    # Another proxy of the zone still goes to the host that answers.
    assert choose_host("q", "z", down, {"p": "h1"}) == Build("h2")
    # A pin on a host that left the config is not waited for.
    assert choose_host("p", "z", [up("h2")], {"p": "h9"}) == Build("h2")


def test_a_down_mark_holds_for_its_time_then_the_host_is_tried_again() -> None:
    marks = DownMarks(30.0)
    assert marks.get("h1", 1000.0) is None
    marks.mark(Down("h1", "host h1 unreachable", permanent=True), 1000.0)
    held = marks.get("h1", 1010.0)
    assert held == Down("h1", "host h1 unreachable", permanent=True, held=True)
    assert marks.get("h2", 1010.0) is None
    assert marks.get("h1", 1030.0) is None  # expired: survey it again
    assert marks.get("h1", 1010.0) is None  # and forgotten


@pytest.mark.parametrize("now", [999.0, 1030.0, 5000.0])
def test_a_down_mark_never_outlives_its_time_even_when_the_clock_jumps(now: float) -> None:
    marks = DownMarks(30.0)
    marks.mark(Down("h1", "unreachable"), 1000.0)
    assert marks.get("h1", now) is None
