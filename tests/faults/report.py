"""The fault suite's table: one row per fault (pure, so it is tested and pasted as is)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.faults.audit import Verdict


@dataclass
class Row:
    fault: str
    rps: float
    """Grant and release requests per second while the fault lasted."""
    error_rate: float
    """Share of those not answered 2xx."""
    recovered: list[str] = field(default_factory=list)
    """What came back by itself, with how long it took."""
    verdict: Verdict = field(default_factory=Verdict)
    leases: int = 0
    """2xx leases recorded during this fault's run."""
    events: int = 0
    """Events on the stream when it was audited."""
    statuses: dict[str, int] = field(default_factory=dict)
    """The non-2xx answers during the fault, by status and error code."""

    @property
    def passed(self) -> bool:
        return not self.verdict.findings


def lost_cell(v: Verdict) -> str:
    parts = [f"{n} {check}" for check, n in sorted(v.by_check().items())]
    if v.lost_with_redis or v.events_lost_with_redis:
        parts.append(
            f"accounted: {v.lost_with_redis} leases and {v.events_lost_with_redis} lease "
            "events lost with Redis"
        )
    return ", ".join(parts) or "nothing"


def render(rows: list[Row]) -> str:
    lines = [
        "| fault | load held: req/s, errors | audited | recovered by itself | lost | verdict |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        by = ", ".join(f"{n}x {s}" for s, n in sorted(r.statuses.items()))
        load = f"{r.rps:.0f}/s, {r.error_rate:.1%}" + (f" ({by})" if by else "")
        lines.append(
            f"| {r.fault} | {load if r.rps else '-'} | {r.leases} leases, {r.events} events | "
            f"{'; '.join(r.recovered) or '-'} | {lost_cell(r.verdict)} | "
            f"{'pass' if r.passed else 'FAIL'} |"
        )
    return "\n".join(lines)


def failures(rows: Sequence[Row], examples: int = 3) -> str:
    """What failed, by fault and check, with a few examples each (for the assertion)."""
    out: list[str] = []
    for r in rows:
        by: dict[str, list[str]] = {}
        for f in r.verdict.findings:
            by.setdefault(f.check, []).append(f.detail)
        for check, details in sorted(by.items()):
            out.append(f"{r.fault}: {check} x{len(details)}: " + "; ".join(details[:examples]))
    return "\n".join(out)


@dataclass
class HeavyRow(Row):
    """A fault under the heavy load (wrk): `rps`, `error_rate` and `statuses` are the
    fault's window, as in Row; these are the whole run's and the window's peaks."""

    run_rps: float = 0.0
    run_statuses: dict[str, int] = field(default_factory=dict)
    outbox_peak: int = 0
    """Entries in the outbox, highest sample in the fault's window."""
    memory_peak: int = 0
    """Redis's INFO used_memory (bytes), highest sample in the fault's window."""
    states_read: int = 0
    """Leases whose state was read back (the others are audited from their records)."""
    seconds: float = 0.0
    """The row's whole time: load, fault, drain and audit."""


def render_heavy(rows: list[HeavyRow]) -> str:
    lines = [
        "| fault | load: req/s over the run; during the fault, errors | non-2xx over the run "
        "| outbox peak, Redis used_memory peak | audited | recovered by itself | lost | verdict "
        "| row took |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        by = ", ".join(f"{n}x {s}" for s, n in sorted(r.run_statuses.items())) or "none"
        lines.append(
            f"| {r.fault} | {r.run_rps:,.0f}/s; {r.rps:,.0f}/s, {r.error_rate:.1%} | {by} | "
            f"{r.outbox_peak:,} entries, {r.memory_peak / 2**20:.1f} MiB | "
            f"{r.leases:,} leases ({r.states_read:,} states read back), {r.events:,} events | "
            f"{'; '.join(r.recovered) or '-'} | {lost_cell(r.verdict)} | "
            f"{'pass' if r.passed else 'FAIL'} | {r.seconds:.0f}s |"
        )
    return "\n".join(lines)
