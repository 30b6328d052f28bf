"""Health probes/s through SOCKS5 upstreams against HTTP ones, in the same run.

The same fleet size is registered on as many microsocks processes (SOCKS5 with
username/password) as the HTTP runs have Squids, and probed by one real `proxyfleet-health`
each time; the two kinds alternate (HTTP, SOCKS5, then SOCKS5, HTTP, ...) so a change in
the shared machine's speed during the run weighs on both alike. Figures are medians.
"""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path

from proxyfleet.bench.figures import Figure
from proxyfleet.bench.health_fleet import SquidPool, start_microsocks
from proxyfleet.bench.health_runs import RunResult, RunSpec

WHAT = "health probes/s through SOCKS5 upstreams vs HTTP ones, same run"

Measure = Callable[[RunSpec, SquidPool], Awaitable[RunResult]]


async def socks_vs_http(
    one: Measure, base: Path, squids: SquidPool, proxies: int, rounds: int
) -> Figure:
    """`rounds` runs of each kind, `proxies` proxies a run (a figure saying why not when
    microsocks is missing)."""
    try:
        socks_pool = start_microsocks(base / "microsocks", len(squids.squids))
    except RuntimeError as exc:
        return Figure(WHAT, 0, "probes/s", "reported", met=False, notes=f"not measured: {exc}")
    spec = RunSpec(proxies, 60.0, passes=1)
    runs: dict[str, list[RunResult]] = {"http": [], "socks5": []}
    try:
        for n in range(rounds):
            order = [("http", squids), ("socks5", socks_pool)]
            for kind, pool in order if n % 2 == 0 else order[::-1]:
                runs[kind].append(await one(spec, pool))
    finally:
        socks_pool.stop()
    rate, baseline = _median(runs["socks5"], RunResult.rate), _median(runs["http"], RunResult.rate)
    extra = {"http_probes_per_s": round(baseline), "rounds": float(rounds)}
    for kind, results in runs.items():
        extra[f"{kind}_worker_cpu_us_per_probe"] = round(
            _median(results, lambda r: r.cpu_per_probe_us()), 1
        )
        extra[f"{kind}_upstreams_cpu_us_per_probe"] = round(
            _median(results, lambda r: r.cpu_per_probe_us(lambda s: s.squids_cpu)), 1
        )
        extra[f"{kind}_failed_probes"] = sum(r.failed for r in results)
    k = len(squids.squids)
    return Figure(
        what=WHAT,
        value=round(rate),
        unit="probes/s",
        target="reported",
        baseline=round(baseline),
        ratio=round(rate / baseline, 2) if baseline else None,
        notes=(
            f"{proxies:,} proxies on {k} microsocks (greeting, RFC 1929 auth, CONNECT to the "
            f"target's address) vs on {k} Squids (CONNECT), {rounds} run(s) of each, "
            f"alternating, medians; {spec.how()}; then TLS to the target and one GET either "
            "way; baseline = HTTP"
        ),
        extra=extra,
    )


def _median(results: list[RunResult], of: Callable[[RunResult], float]) -> float:
    return statistics.median(of(r) for r in results)
