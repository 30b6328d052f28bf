"""The one table a run prints (and its Markdown twin in docs/performance.md). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from proxyfleet.bench.figures import Figure

HEADERS = ("what", "figure", "target", "baseline", "ratio", "met?")


def number(value: float, unit: str = "") -> str:
    if value == 0 or abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".strip()


def row(f: Figure) -> tuple[str, ...]:
    met = "-" if f.met is None else ("yes" if f.met else "NO")
    return (
        f.what,
        "missing" if f.missing else number(f.value, f.unit),
        f.target or "-",
        "-" if f.baseline is None else number(f.baseline, f.unit),
        "-" if f.ratio is None else f"{f.ratio:.2f}",
        met,
    )


def text_table(figures: Sequence[Figure]) -> str:
    rows = [HEADERS, *(row(f) for f in figures)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(figures: Sequence[Figure]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS)]
    for f in figures:
        cells = [c.replace("|", "\\|") for c in row(f)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes_list(figures: Sequence[Figure]) -> str:
    return "\n".join(f"- **{f.what}**: {f.notes}" for f in figures if f.notes)
