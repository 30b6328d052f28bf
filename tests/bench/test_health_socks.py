"""The SOCKS5-vs-HTTP health figure's arithmetic and run order, with made-up runs and no
upstreams (no processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.bench import health_socks
from proxyfleet.bench.health_fleet import SquidPool
from proxyfleet.bench.health_runs import RunResult, RunSpec, Sample
from proxyfleet.common.wire.models import Scheme


def _run(spec: RunSpec, seconds: float, cpu_per_probe: float) -> RunResult:
    """A run that probes the fleet evenly in `seconds`."""
    result = RunResult(spec)
    n = spec.proxies
    result.samples = [
        Sample(at=seconds * i / 10, ok=n * i / 10, failed=0, cpu=n * i / 10 * cpu_per_probe, rss=1)
        for i in range(11)
    ]
    return result


async def test_the_two_kinds_alternate_and_medians_are_reported(tmp_path: Path) -> None:
    order: list[Scheme] = []

    async def one(spec: RunSpec, pool: SquidPool) -> RunResult:
        order.append(pool.scheme)
        if pool.scheme == Scheme.SOCKS5:
            return _run(spec, 2.0, 0.0015)
        return _run(spec, 1.0, 0.001)

    figure = await health_socks.socks_vs_http(one, tmp_path, SquidPool(), 1000, rounds=3)
    http, socks = Scheme.HTTP, Scheme.SOCKS5
    assert order == [http, socks, socks, http, http, socks]
    assert (figure.value, figure.baseline, figure.ratio) == (500, 1000, 0.5)
    assert figure.extra["socks5_worker_cpu_us_per_probe"] == pytest.approx(1500)
    assert figure.extra["http_worker_cpu_us_per_probe"] == pytest.approx(1000)


async def test_without_microsocks_the_figure_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(*_: object) -> SquidPool:
        raise RuntimeError("microsocks not found: the SOCKS5 health benchmark needs it")

    monkeypatch.setattr(health_socks, "start_microsocks", missing)

    async def one(spec: RunSpec, pool: SquidPool) -> RunResult:
        raise AssertionError("nothing is measured")

    figure = await health_socks.socks_vs_http(one, tmp_path, SquidPool(), 1000, rounds=1)
    assert figure.met is False
    assert (
        figure.notes == "not measured: microsocks not found: the SOCKS5 health benchmark needs it"
    )
