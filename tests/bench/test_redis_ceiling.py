"""The Redis ceiling benchmark's arithmetic: a round's figures come from its raw numbers,
the scripts' time is EVALSHA's and EVAL's, and the median round is a whole round."""

from __future__ import annotations

import pytest

from proxyfleet.bench.redis_ceiling import Round, median_round, script_stats


def a_round(cycles: int = 10_000, window: float = 2.0, redis_cpu: float = 1.0) -> Round:
    return Round(
        cycles=cycles,
        refused=0,
        window=window,
        redis_cpu=redis_cpu,
        clients_cpu=0.5,
        machine_cpu=3.0,
        script_calls=2 * cycles,
        script_usec=600_000.0,
    )


def test_a_rounds_figures_are_per_cycle_and_the_ceiling_is_a_core_over_redis_cpu() -> None:
    got = a_round()  # 10,000 cycles in 2 s, Redis 1 CPU second: half a core
    assert got.cycles_per_second == 5_000
    assert got.redis_us_per_cycle == pytest.approx(100.0)
    assert got.ceiling == pytest.approx(10_000.0)  # a whole core at 100 us a cycle
    assert got.redis_busy == pytest.approx(0.5)
    assert got.script_us_per_cycle == pytest.approx(60.0)
    assert got.script_us_per_call == pytest.approx(30.0)  # a grant and a release a cycle
    assert got.clients_us_per_cycle == pytest.approx(50.0)


def test_a_round_with_no_cycles_has_no_ceiling_rather_than_a_division_by_zero() -> None:
    empty = Round(0, 5, 0.0, 0.0, 0.0, 0.0, 0, 0.0)
    assert (empty.cycles_per_second, empty.redis_us_per_cycle, empty.ceiling) == (0, 0, 0)
    assert (empty.script_us_per_call, empty.redis_busy) == (0, 0)


def test_script_stats_add_evalsha_and_eval_and_nothing_else() -> None:
    stats = {
        "cmdstat_evalsha": {"calls": 1_000, "usec": 40_000, "usec_per_call": 40.0},
        "cmdstat_eval": {"calls": 2, "usec": 500, "usec_per_call": 250.0},
        # A script's inner commands are counted again under their own names.
        "cmdstat_hmget": {"calls": 9_000, "usec": 9_000, "usec_per_call": 1.0},
    }
    assert script_stats(stats) == (1_002, 40_500.0)
    assert script_stats({}) == (0, 0.0)


def test_the_median_round_is_the_middle_one_by_throughput_taken_whole() -> None:
    slow, mid, fast = a_round(cycles=4_000), a_round(cycles=6_000), a_round(cycles=9_000)
    assert median_round([fast, slow, mid]) is mid
    assert median_round([fast, slow]) is slow  # an even count: the lower of the two
    with pytest.raises(ValueError, match="no rounds"):
        median_round([])
