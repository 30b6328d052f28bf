from __future__ import annotations

import pytest

from proxyfleet.common.domain.lifecycle import (
    ALLOWED,
    Hysteresis,
    can_transition,
    decide_after_probe,
    may_fail_unhealthy,
)
from proxyfleet.common.wire.models import Phase


def test_every_phase_has_rules_and_deleted_is_terminal() -> None:
    assert set(ALLOWED) == set(Phase)
    assert ALLOWED[Phase.DELETED] == frozenset()
    for src in Phase:
        if src is not Phase.DELETED:
            assert can_transition(src, Phase.DELETING) or src is Phase.DELETING


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        (Phase.PENDING, Phase.PROVISIONING, True),
        (Phase.PROVISIONING, Phase.BOOTING, True),
        (Phase.BOOTING, Phase.READY, True),
        (Phase.READY, Phase.UNHEALTHY, True),
        (Phase.UNHEALTHY, Phase.READY, True),
        (Phase.DELETING, Phase.DELETED, True),
        (Phase.READY, Phase.BOOTING, False),
        (Phase.DELETED, Phase.READY, False),
        (Phase.FAILED, Phase.READY, True),  # an external proxy only: the store checks
        (Phase.FAILED, Phase.BOOTING, False),
        (Phase.PENDING, Phase.READY, False),
    ],
)
def test_transitions(src: Phase, dst: Phase, ok: bool) -> None:
    assert can_transition(src, dst) is ok


def test_booting_becomes_ready_after_first_good_probe() -> None:
    d = decide_after_probe(Phase.BOOTING, True, 0, 5, now=10, boot_deadline=100, since=0)
    assert (d.next_phase, d.ok_streak, d.fail_streak) == (Phase.READY, 1, 0)


def test_booting_stays_until_deadline_then_fails_with_reason() -> None:
    stay = decide_after_probe(
        Phase.BOOTING, False, 0, 0, now=99, boot_deadline=100, since=0, error="x"
    )
    assert stay.next_phase is None
    fail = decide_after_probe(
        Phase.BOOTING, False, 0, 4, now=100, boot_deadline=100, since=0, error="407"
    )
    assert fail.next_phase is Phase.FAILED
    assert "boot timeout" in fail.reason
    assert "407" in fail.reason


def test_ready_turns_unhealthy_after_three_failures_only() -> None:
    fails, phase = 0, Phase.READY
    seen = []
    for _ in range(3):
        d = decide_after_probe(
            phase, False, 0, fails, now=1, boot_deadline=0, since=0, error="refused"
        )
        fails = d.fail_streak
        seen.append(d.next_phase)
    assert seen == [None, None, Phase.UNHEALTHY]


def test_unhealthy_needs_two_successes_and_a_failure_resets() -> None:
    d1 = decide_after_probe(Phase.UNHEALTHY, True, 0, 3, now=1, boot_deadline=0, since=0)
    assert d1.next_phase is None
    reset = decide_after_probe(
        Phase.UNHEALTHY, False, d1.ok_streak, 0, now=1, boot_deadline=0, since=0
    )
    assert reset.ok_streak == 0
    d2 = decide_after_probe(Phase.UNHEALTHY, True, d1.ok_streak, 0, now=1, boot_deadline=0, since=0)
    assert d2.next_phase is Phase.READY


def test_custom_hysteresis() -> None:
    rules = Hysteresis(unhealthy_after=1, ready_after=1)
    d = decide_after_probe(Phase.READY, False, 3, 0, now=1, boot_deadline=0, since=0, rules=rules)
    assert d.next_phase is Phase.UNHEALTHY


def _unhealthy_probe(
    ok: bool, *, since: float, now: float, timeout: float = 300.0
) -> tuple[Phase | None, str]:
    rules = Hysteresis(unhealthy_timeout=timeout)
    d = decide_after_probe(
        Phase.UNHEALTHY,
        ok,
        0,
        5,
        now=now,
        boot_deadline=0,
        since=since,
        error="refused",
        rules=rules,
    )
    return d.next_phase, d.reason


def test_an_unhealthy_proxy_fails_at_its_first_failed_probe_from_its_timeout_on() -> None:
    assert _unhealthy_probe(False, since=1000, now=1299.9) == (None, "")
    assert _unhealthy_probe(False, since=1000, now=1300) == (
        Phase.FAILED,
        "unhealthy for 300 s: refused",
    )
    assert _unhealthy_probe(False, since=1000, now=5000)[0] is Phase.FAILED
    # a good probe past the timeout may be its way back: it does not fail it
    assert _unhealthy_probe(True, since=1000, now=5000) == (None, "")


def test_an_unhealthy_timeout_of_zero_never_fails_a_proxy() -> None:
    assert _unhealthy_probe(False, since=0, now=1e9, timeout=0) == (None, "")


def test_the_unhealthy_timeout_applies_to_unhealthy_proxies_only() -> None:
    for phase in (Phase.READY, Phase.BOOTING):
        d = decide_after_probe(phase, False, 0, 0, now=1e9, boot_deadline=0, since=0)
        assert d.next_phase is None


def test_an_unhealthy_proxy_past_its_timeout_still_recovers_on_enough_good_probes() -> None:
    d = decide_after_probe(Phase.UNHEALTHY, True, 1, 0, now=1e9, boot_deadline=0, since=0)
    assert d.next_phase is Phase.READY


@pytest.mark.parametrize(
    ("ready", "unhealthy", "share", "allowed"),
    [
        (9, 1, 0.5, True),
        (5, 5, 0.5, True),  # half: not more than half
        (4, 6, 0.5, False),
        (0, 2, 0.5, False),  # every proxy unhealthy: the target, not the proxies
        (0, 1, 0.5, True),  # a single unhealthy proxy always may
        (0, 10, 1.0, True),  # 1.0: no limit
        (7, 3, 0.25, False),
    ],
)
def test_an_unhealthy_timeout_fails_no_proxy_while_most_of_its_provider_is_unhealthy(
    ready: int, unhealthy: int, share: float, allowed: bool
) -> None:
    counts = {Phase.READY: ready, Phase.UNHEALTHY: unhealthy, Phase.BOOTING: 50}
    assert may_fail_unhealthy(counts, share) is allowed
