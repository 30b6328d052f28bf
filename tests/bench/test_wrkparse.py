"""The pure wrk output parser, on outputs captured from real runs (samples/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.bench.wrkparse import WrkOutputError, duration_us, parse_wrk

SAMPLES = Path(__file__).parent / "samples"

# wrk's own lines for a run with failures (the format of wrk 4.1's summary).
FAILING = """\
Running 2s test @ http://127.0.0.1:40000/v1/leases
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   850.12us  210.33us   1.20s    91.00%
    Req/Sec     1.20k   100.00     1.50k    70.00%
  Latency Distribution
     50%  812.00us
     75%    1.02ms
     90%    1.50ms
     99%    1.10s
  4800 requests in 2.00s, 1.10MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 17
Requests/sec:   2400.00
Transfer/sec:    563.20KB
"""


def test_static_run_sample() -> None:
    r = parse_wrk((SAMPLES / "wrk_static.txt").read_text())
    assert r.requests > 0
    assert r.rps == pytest.approx(r.requests / r.seconds, rel=0.05)
    assert set(r.latency_ms) == {50.0, 75.0, 90.0, 99.0}
    assert r.latency_ms[50] <= r.latency_ms[99]
    assert r.errors == 0
    # our done(): the whole distribution in microseconds, and wrk's counters
    assert r.series_us["all"][50] == pytest.approx(r.latency_ms[50] * 1000, rel=0.05)
    assert r.series_us["all"][100] >= r.series_us["all"][99.99] > 0
    assert r.counts["requests"] == r.requests


def test_cycle_run_sample() -> None:
    r = parse_wrk((SAMPLES / "wrk_cycle.txt").read_text())
    cycles, grants = r.counts["cycles"], r.counts["grants"]
    assert 0 < cycles <= grants
    assert r.counts["requests"] == r.requests
    assert r.counts["failed"] == 0
    assert r.per_second("cycles") == pytest.approx(cycles / r.seconds)
    assert r.counts["grant_samples"] == grants
    assert 0 < r.percentile_ms(50, "grant") <= r.percentile_ms(99, "grant")
    assert r.percentile_ms(50, "release") > 0


def test_errors_count_non_2xx_and_socket_errors() -> None:
    r = parse_wrk(FAILING)
    assert r.non_2xx == 17
    assert r.socket_errors == {"connect": 1, "read": 2, "write": 3, "timeout": 4}
    assert r.errors == 27
    assert r.latency_ms[50] == pytest.approx(0.812)
    assert r.latency_ms[99] == pytest.approx(1100.0)
    assert r.seconds == pytest.approx(2.0)
    assert r.percentile_ms(75) == pytest.approx(1.02)  # no PF_ lines: wrk's table
    with pytest.raises(KeyError):
        r.percentile_ms(50, "grant")


def test_not_wrk_output_is_refused() -> None:
    with pytest.raises(WrkOutputError, match="not a finished wrk run"):
        parse_wrk("unable to connect to 127.0.0.1:1 Connection refused\n")
    with pytest.raises(WrkOutputError):
        parse_wrk("")


def test_duration_units() -> None:
    assert duration_us("1.5", "ms") == 1500.0
    assert duration_us("2", "s") == 2_000_000.0
    assert duration_us("1", "m") == 60_000_000.0
    with pytest.raises(WrkOutputError):
        duration_us("1", "ks")
