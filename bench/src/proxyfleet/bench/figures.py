"""What one benchmark measured: the unit every bench module returns and the report prints."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Figure:
    what: str
    """What was measured, e.g. 'lease grant throughput'."""
    value: float
    unit: str
    """'req/s', 'ms', 'KB', 's', 'MB', 'probes/s', ..."""
    target: str = ""
    """The target as written in the issue, e.g. '>= 75% of baseline', '<= 25 ms'."""
    baseline: float | None = None
    """The baseline measured in the same run (same unit), when the target is a ratio."""
    ratio: float | None = None
    """value / baseline (or the ratio the target is about)."""
    met: bool | None = None
    """Whether the target is met (None: reported only)."""
    notes: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    """Further numbers worth keeping (percentiles, counts) for the doc."""
    missing: str = ""
    """Why this row was not measured in this run (the table shows `missing`; value unused)."""
