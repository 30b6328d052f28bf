from __future__ import annotations

import pytest

from proxyfleet.common.lifecycle import ALLOWED, Hysteresis, can_transition, decide_after_probe
from proxyfleet.common.models import Phase


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
        (Phase.FAILED, Phase.READY, False),
        (Phase.PENDING, Phase.READY, False),
    ],
)
def test_transitions(src: Phase, dst: Phase, ok: bool) -> None:
    assert can_transition(src, dst) is ok


def test_booting_becomes_ready_after_first_good_probe() -> None:
    d = decide_after_probe(Phase.BOOTING, True, 0, 5, now=10, boot_deadline=100)
    assert (d.next_phase, d.ok_streak, d.fail_streak) == (Phase.READY, 1, 0)


def test_booting_stays_until_deadline_then_fails_with_reason() -> None:
    stay = decide_after_probe(Phase.BOOTING, False, 0, 0, now=99, boot_deadline=100, error="x")
    assert stay.next_phase is None
    fail = decide_after_probe(Phase.BOOTING, False, 0, 4, now=100, boot_deadline=100, error="407")
    assert fail.next_phase is Phase.FAILED
    assert "boot timeout" in fail.reason
    assert "407" in fail.reason


def test_ready_turns_unhealthy_after_three_failures_only() -> None:
    fails, phase = 0, Phase.READY
    seen = []
    for _ in range(3):
        d = decide_after_probe(phase, False, 0, fails, now=1, boot_deadline=0, error="refused")
        fails = d.fail_streak
        seen.append(d.next_phase)
    assert seen == [None, None, Phase.UNHEALTHY]


def test_unhealthy_needs_two_successes_and_a_failure_resets() -> None:
    d1 = decide_after_probe(Phase.UNHEALTHY, True, 0, 3, now=1, boot_deadline=0)
    assert d1.next_phase is None
    reset = decide_after_probe(Phase.UNHEALTHY, False, d1.ok_streak, 0, now=1, boot_deadline=0)
    assert reset.ok_streak == 0
    d2 = decide_after_probe(Phase.UNHEALTHY, True, d1.ok_streak, 0, now=1, boot_deadline=0)
    assert d2.next_phase is Phase.READY


def test_custom_hysteresis() -> None:
    rules = Hysteresis(unhealthy_after=1, ready_after=1)
    d = decide_after_probe(Phase.READY, False, 3, 0, now=1, boot_deadline=0, rules=rules)
    assert d.next_phase is Phase.UNHEALTHY
