"""Figures, the table, the doc and the plot, from made-up results (pure; no timing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.bench.api_bench import ApiRuns, Sizes
from proxyfleet.bench.api_figures import figures
from proxyfleet.bench.doc import render
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.fleet import Audit
from proxyfleet.bench.plot import plot_latency
from proxyfleet.bench.report import markdown_table, text_table
from proxyfleet.bench.suite import selected
from proxyfleet.bench.wrkparse import WrkResult

SIZES = Sizes(seconds=10, warmup=2, small_fleet=100, large_fleet=100_000)


def result(rps: float, p50_ms: float, p99_ms: float, **counts: int) -> WrkResult:
    points = {50.0: p50_ms * 1000, 90.0: p50_ms * 1500, 99.0: p99_ms * 1000}
    series = {"all": points}
    if "cycles" in counts:
        series["grant"] = points
    return WrkResult(
        requests=int(rps * 10),
        seconds=10.0,
        rps=rps,
        latency_ms={50.0: p50_ms, 90.0: p50_ms * 1.5, 99.0: p99_ms},
        series_us=series,
        counts=counts,
    )


def runs() -> ApiRuns:
    return ApiRuns(
        sizes=SIZES,
        json=result(8000, 5, 10),
        evalsha=result(6000, 8, 15),
        grant=result(4800, 10, 20),
        cycle_small=result(5000, 10, 20, cycles=25_000),
        cycle_large=result(5000, 11, 22, cycles=24_000),
        audit=Audit(leases=100, duplicate_epochs=0, overlaps=0),
        rss_idle_mb=80.0,
        rss_load_mb=90.0,
    )


def by_what(figs: list[Figure]) -> dict[str, Figure]:
    return {f.what.split(" (")[0]: f for f in figs}


def test_api_figures_ratios_and_verdicts() -> None:
    figs = by_what(figures(runs()))
    grant = figs["lease grant throughput"]
    assert grant.baseline == 6000
    assert grant.ratio == 0.8
    assert grant.met is True
    cycle = figs["grant -> release cycle throughput"]
    assert cycle.value == 2400  # 24,000 cycles in 10 s
    assert cycle.ratio == 0.4
    assert cycle.met is True
    p99 = figs["grant latency p99 at 100,000 proxies"]
    assert (p99.value, p99.met) == (20.0, True)
    fleet = figs["grant p50, 100,000 vs 100 registered proxies"]
    assert fleet.ratio == 1.1
    assert fleet.met is True
    assert figs["errors in the lease runs"].met is True
    assert figs["double grants"].value == 0


def test_errors_and_double_grants_fail_the_target() -> None:
    r = runs()
    latency = {50.0: 1.0, 90.0: 2.0, 99.0: 30.0}
    r.grant = WrkResult(requests=10, seconds=1, rps=10, latency_ms=latency, non_2xx=3)
    r.audit = Audit(leases=10, duplicate_epochs=1, overlaps=1, examples=("p1: a overlaps b",))
    figs = by_what(figures(r))
    assert figs["errors in the lease runs"].value == 3
    assert figs["errors in the lease runs"].met is False
    assert figs["double grants"].value == 2
    assert "p1: a overlaps b" in figs["double grants"].notes
    assert figs["grant latency p99 at 100,000 proxies"].met is False


def test_table_doc_and_plot(tmp_path: Path) -> None:
    figs = figures(runs())
    table = text_table(figs)
    assert table.splitlines()[0].split() == [
        "what",
        "figure",
        "target",
        "baseline",
        "ratio",
        "met?",
    ]
    assert "4,800 req/s" in table
    assert "| lease grant throughput | 4,800 req/s |" in markdown_table(figs)
    png = tmp_path / "latency.png"
    assert plot_latency(figs, png, "test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = render(figs, {"cores (nproc)": "2"}, plot_file="latency.png", failures=["x: boom"],
                 command="proxyfleet-bench run")  # fmt: skip
    assert "![latency distribution](latency.png)" in doc
    assert "- cores (nproc): 2" in doc
    assert "x: boom" in doc
    assert "## Method" in doc
    assert "## How to reproduce" in doc


def test_plot_without_distributions_draws_nothing(tmp_path: Path) -> None:
    assert not plot_latency([Figure(what="x", value=1, unit="MB")], tmp_path / "p.png", "t")
    assert not (tmp_path / "p.png").exists()


def test_selected_modules() -> None:
    assert selected([]) == [
        "api", "redis", "egress", "replica-wait", "health", "lifecycle", "gateway",
        "gateway-upstreams", "pools", "redis-ceiling",
    ]  # fmt: skip
    assert selected(["lifecycle", "api"]) == ["api", "lifecycle"]
    with pytest.raises(ValueError, match="nope"):
        selected(["nope"])
