"""docs/performance.md from a run: method, machine, figures, plot, changes, how to reproduce."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources

from proxyfleet.bench.figures import Figure
from proxyfleet.bench.plot import series_of
from proxyfleet.bench.report import markdown_table, notes_list, number

SHOWN_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)


def _text(name: str) -> str:
    return (resources.files("proxyfleet.bench") / "text" / name).read_text().strip()


def distribution_table(figures: Sequence[Figure]) -> str:
    rows = [(f.what, dict(series_of(f))) for f in figures]
    rows = [(what, pts) for what, pts in rows if pts]
    if not rows:
        return ""
    head = ["series", *(f"p{p:g}" for p in SHOWN_PERCENTILES)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for what, pts in rows:
        cells = [number(pts[p], "ms") if p in pts else "-" for p in SHOWN_PERCENTILES]
        lines.append("| " + " | ".join([what, *cells]) + " |")
    return "\n".join(lines)


def render(
    figures: Sequence[Figure],
    machine: dict[str, str],
    *,
    plot_file: str | None,
    failures: Sequence[str],
    command: str,
) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# Performance",
        f"Written by `{command}` on {when}. Every figure below was measured in that run, "
        "on the machine described here; the ratios compare routes served by the same "
        "process in the same run.",
        "## Figures",
        markdown_table(figures),
    ]
    if notes := notes_list(figures):
        parts.append(notes)
    if failures:
        parts.append(
            "**Benchmarks that did not complete in this run:**\n\n"
            + "\n".join(f"- {line}" for line in failures)
        )
    parts.append(_text("missed.md"))
    parts.append("## Latency distribution")
    if plot_file:
        parts.append(
            f"![latency distribution]({plot_file})\n\n"
            "Each curve is the latency distribution of the run behind the figure it is named "
            "after: the two baselines, grant-only, and the grants alone (timed in the Lua "
            "script) of the grant -> release cycle run at 100,000 proxies."
        )
    if table := distribution_table(figures):
        parts.append(table)
    parts += [
        "## Machine",
        "\n".join(f"- {k}: {v}" for k, v in machine.items()),
        _text("method.md"),
        _text("changes.md"),
        _text("health.md"),
        _text("reproduce.md"),
    ]
    return "\n\n".join(parts) + "\n"
