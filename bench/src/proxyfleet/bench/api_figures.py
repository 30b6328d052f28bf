"""ApiRuns -> Figures (pure): the targets of issue 3 for the API and lease store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proxyfleet.bench.figures import Figure
from proxyfleet.bench.wrkparse import WrkResult

if TYPE_CHECKING:
    from proxyfleet.bench.api_bench import ApiRuns

LATENCY_PREFIX = "lat_p"
"""Figure.extra keys `lat_p<percentile>` hold a latency distribution in ms (the plot's)."""

GRANT_RATIO = 0.75
CYCLE_RATIO = 0.40
P99_MS = 25.0
FLEET_P50_RATIO = 1.25


def distribution(result: WrkResult, series: str = "all") -> dict[str, float]:
    """Latency percentiles in ms as Figure.extra entries (lat_p50, lat_p99.9, ...)."""
    values = result.series_us.get(series, {})
    if not values and series == "all":
        return {f"{LATENCY_PREFIX}{p:g}": ms for p, ms in result.latency_ms.items()}
    return {f"{LATENCY_PREFIX}{p:g}": us / 1000.0 for p, us in values.items()}


def _counts(result: WrkResult) -> dict[str, float]:
    return {
        "requests": float(result.requests),
        "seconds": result.seconds,
        "non_2xx": float(result.non_2xx),
        "socket_errors": float(sum(result.socket_errors.values())),
    }


def _ratio(value: float, baseline: float) -> float:
    return value / baseline if baseline > 0 else 0.0


def evalsha_baseline(runs: ApiRuns) -> float:
    """The one-EVALSHA baseline the ratios use: the mean of its runs before and after the
    lease runs (the machine's load moves during a run; the ratio should not move with it)."""
    rates = [r.rps for r in (runs.evalsha, runs.evalsha_after) if r is not None]
    return sum(rates) / len(rates) if rates else 0.0


def baseline_figures(runs: ApiRuns) -> list[Figure]:
    out: list[Figure] = []
    for what, res in (
        ("baseline: trivial JSON route (GET /bench/json)", runs.json),
        ("baseline: one-EVALSHA route (POST /bench/evalsha)", runs.evalsha),
    ):
        if res is None:
            continue
        notes = f"p50 {res.percentile_ms(50):.2f} ms, p99 {res.percentile_ms(99):.2f} ms"
        value = res.rps
        if res is runs.evalsha and runs.evalsha_after is not None:
            after = runs.evalsha_after.rps
            value = evalsha_baseline(runs)
            notes = (
                f"mean of {res.rps:,.0f} (before the lease runs) and {after:,.0f} (after); {notes}"
            )
        out.append(
            Figure(
                what=what,
                value=value,
                unit="req/s",
                notes=notes,
                extra={**_counts(res), **distribution(res)},
            )
        )
    return out


def lease_figures(runs: ApiRuns) -> list[Figure]:
    out: list[Figure] = []
    base = evalsha_baseline(runs)
    if runs.grant is not None:
        g = runs.grant
        ratio = _ratio(g.rps, base)
        out.append(
            Figure(
                what="lease grant throughput",
                value=g.rps,
                unit="req/s",
                target=">= 75% of the one-EVALSHA baseline",
                baseline=base,
                ratio=ratio,
                met=ratio >= GRANT_RATIO,
                extra={**_counts(g), **distribution(g)},
            )
        )
        p99 = g.percentile_ms(99)
        base_p99 = runs.evalsha.percentile_ms(99) if runs.evalsha else None
        out.append(
            Figure(
                what=f"grant latency p99 at {runs.sizes.large_fleet:,} proxies",
                value=p99,
                unit="ms",
                target="<= 25 ms",
                baseline=base_p99,
                ratio=_ratio(p99, base_p99) if base_p99 else None,
                met=p99 <= P99_MS,
                notes=f"p50 {g.percentile_ms(50):.2f} ms, p90 {g.percentile_ms(90):.2f} ms",
            )
        )
    if runs.cycle_large is not None:
        c = runs.cycle_large
        cycles = c.per_second("cycles")
        ratio = _ratio(cycles, base)
        out.append(
            Figure(
                what="grant -> release cycle throughput",
                value=cycles,
                unit="cycles/s",
                target=">= 40% of the one-EVALSHA baseline",
                baseline=base,
                ratio=ratio,
                met=ratio >= CYCLE_RATIO,
                notes=f"two requests a cycle; {runs.sizes.large_fleet:,} proxies, cooldown 0",
                extra={**_counts(c), **distribution(c, "grant")},
            )
        )
    return out


def fleet_figures(runs: ApiRuns) -> list[Figure]:
    small, large = runs.cycle_small, runs.cycle_large
    if small is None or large is None:
        return []
    p_small = small.percentile_ms(50, "grant")
    p_large = large.percentile_ms(50, "grant")
    ratio = _ratio(p_large, p_small)
    return [
        Figure(
            what=(
                f"grant p50, {runs.sizes.large_fleet:,} vs "
                f"{runs.sizes.small_fleet:,} registered proxies"
            ),
            value=p_large,
            unit="ms",
            target="<= 1.25x",
            baseline=p_small,
            ratio=ratio,
            met=ratio <= FLEET_P50_RATIO,
            notes="grants timed inside grant -> release cycles (64 connections, same duration)",
            extra={
                "cycles_per_s_small": small.per_second("cycles"),
                "cycles_per_s_large": large.per_second("cycles"),
                "seed_seconds": runs.seed_seconds,
            },
        )
    ]


def safety_figures(runs: ApiRuns) -> list[Figure]:
    out: list[Figure] = []
    lease_runs = [r for r in (runs.cycle_small, runs.cycle_large, runs.grant) if r is not None]
    if lease_runs:
        errors = sum(r.errors for r in lease_runs)
        out.append(
            Figure(
                what="errors in the lease runs (non-2xx + socket errors)",
                value=float(errors),
                unit="count",
                target="= 0",
                met=errors == 0,
                extra={
                    "non_2xx": float(sum(r.non_2xx for r in lease_runs)),
                    "socket_errors": float(sum(sum(r.socket_errors.values()) for r in lease_runs)),
                    "requests": float(sum(r.requests for r in lease_runs)),
                },
            )
        )
    if runs.audit is not None:
        a = runs.audit
        out.append(
            Figure(
                what="double grants (Redis audit of every lease of the run)",
                value=float(a.double_grants),
                unit="count",
                target="= 0",
                met=a.double_grants == 0,
                notes=f"{a.leases:,} leases audited"
                + (f"; e.g. {a.examples[0]}" if a.examples else ""),
                extra={
                    "leases": float(a.leases),
                    "duplicate_epochs": float(a.duplicate_epochs),
                    "overlaps": float(a.overlaps),
                },
            )
        )
    return out


def rss_figures(runs: ApiRuns) -> list[Figure]:
    return [
        Figure(what="API RSS, idle", value=runs.rss_idle_mb, unit="MB", target="reported"),
        Figure(
            what="API RSS, under the grant load (peak)",
            value=runs.rss_load_mb,
            unit="MB",
            target="reported",
        ),
    ]


def figures(runs: ApiRuns) -> list[Figure]:
    return [
        *baseline_figures(runs),
        *lease_figures(runs),
        *fleet_figures(runs),
        *safety_figures(runs),
        *rss_figures(runs),
    ]
