"""The health and lifecycle benchmarks' arithmetic, on made-up samples (no processes)."""

from __future__ import annotations

import msgspec
import pytest

from proxyfleet.bench.health_proc import Target
from proxyfleet.bench.health_runs import POLL, RunResult, RunSpec, Sample
from proxyfleet.bench.lifecycle_events import EventLog, percentile
from proxyfleet.common.wire.events import Event, EventType


def _result(points: list[tuple[float, float]], proxies: int = 100, passes: int = 2) -> RunResult:
    """Samples (time, probes done): 2 ms of worker CPU and 1 ms of Squid CPU a probe."""
    result = RunResult(RunSpec(proxies, 15.0, passes))
    result.samples = [
        Sample(at=t, ok=n, failed=0, cpu=n * 0.002, rss=50 + n / 100, squids_cpu=n * 0.001)
        for t, n in points
    ]
    return result


def test_rate_uses_the_middle_of_the_first_pass() -> None:
    r = _result([(0, 0), (1, 5), (2, 10), (3, 50), (4, 90), (5, 100)])
    assert r.rate() == pytest.approx(80 / 2)  # 10 -> 90 probes between t=2 and t=4


def test_pass_seconds_per_pass() -> None:
    r = _result([(0, 0), (1, 1), (3, 100), (15, 100), (16, 120), (20, 200)])
    assert r.pass_seconds(1) == pytest.approx(3 - 1 + POLL / 2)
    assert r.pass_seconds(2) == pytest.approx(20 - 16 + POLL / 2)
    with pytest.raises(RuntimeError, match="before the fleet was probed"):
        _result([(0, 0), (1, 50)]).pass_seconds(1)


def test_cpu_per_probe_and_rss() -> None:
    r = _result([(0, 0), (1, 10), (2, 90), (3, 100)])
    assert r.cpu_per_probe_us() == pytest.approx(2000)
    assert r.cpu_per_probe_us(lambda s: s.squids_cpu) == pytest.approx(1000)
    assert r.max_rss() == pytest.approx(51)


def test_run_spec_keeps_the_timeout_below_the_interval() -> None:
    target = Target("https://127.0.0.1:1/", 1, "/ca.pem", proc=None)  # type: ignore[arg-type]
    args = RunSpec(10, 4.0, 1, loop="asyncio", tls_resume_for=0).args(target)
    assert args[args.index("--timeout") + 1] == "2.0"
    assert args[args.index("--loop") + 1] == "asyncio"
    assert args[args.index("--tls-resume-for") + 1] == "0"


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (
        50.0,
        99.0,
        100.0,
    )
    assert percentile([7.0], 99) == 7.0


def test_event_log_keeps_the_first_of_each_kind() -> None:
    log = EventLog()
    for kind, pid, at in [
        ("proxy.pending", "p1", 1.0),
        ("proxy.ready", "p1", 2.0),
        ("proxy.ready", "p1", 3.0),
        ("proxy.pending", "p2", 1.5),
        ("proxy.failed", "p3", 4.0),
    ]:
        event = Event(type=EventType(kind), id=f"e{at}", time=at - 0.001, proxy_id=pid)
        log.raw.append((msgspec.json.encode(event), at))
    ends = log.first_of(["p1", "p2", "p3"], ("proxy.ready", "proxy.failed"))
    assert {k: v.received for k, v in ends.items()} == {"p1": 2.0, "p3": 4.0}
    assert [round(s.delay, 3) for s in log.of(["p2"])] == [0.001]
