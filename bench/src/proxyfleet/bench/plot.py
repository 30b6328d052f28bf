"""The latency-distribution plot (PNG) docs/performance.md shows."""

from __future__ import annotations

import math
from pathlib import Path

from proxyfleet.bench.api_figures import LATENCY_PREFIX
from proxyfleet.bench.figures import Figure


def series_of(figure: Figure) -> list[tuple[float, float]]:
    """(percentile, ms) pairs a figure carries in its extra, sorted by percentile."""
    points = [
        (float(key.removeprefix(LATENCY_PREFIX)), value)
        for key, value in figure.extra.items()
        if key.startswith(LATENCY_PREFIX)
    ]
    return sorted(points)


def _x(percentile: float) -> float:
    """Percentiles on the usual 1/(1-p) log axis (p100 is drawn at the p99.999 spot)."""
    return 1.0 / max(1.0 - percentile / 100.0, 1e-5)


def plot_latency(figures: list[Figure], path: Path, title: str) -> bool:
    """Write the plot; False when no figure carries a distribution."""
    curves = [(f.what, series_of(f)) for f in figures]
    curves = [(name, pts) for name, pts in curves if len(pts) >= 2]
    if not curves:
        return False
    import matplotlib  # noqa: PLC0415  (heavy: only when a plot is drawn)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for name, pts in curves:
        ax.plot([_x(p) for p, _ in pts], [ms for _, ms in pts], marker=".", label=name)
    ticks = [50, 90, 99, 99.9, 99.99]
    ax.set_xscale("log")
    ax.set_xticks([_x(p) for p in ticks], [f"p{p:g}" for p in ticks])
    ax.set_xlim(left=1.0)
    top = max(ms for _, pts in curves for _, ms in pts)
    ax.set_ylim(0, math.ceil(top * 1.05) or 1)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True
