"""How values read in a table, and `k=v` arguments parsed (no I/O here)."""

from __future__ import annotations

import time
from collections.abc import Iterable

PHASES = ("pending", "provisioning", "booting", "ready", "unhealthy", "deleting", "failed")
"""The phases a status table has a column for, in lifecycle order (deleted is hidden)."""


def duration(seconds: float) -> str:
    """42s, 3m05s, 2h03m, 3d04h: two units at most."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def until(when: float, now: float | None = None) -> str:
    """`in 42s`, or `3s ago` once past (an expiry)."""
    left = when - (time.time() if now is None else now)
    return f"in {duration(left)}" if left >= 0 else f"{duration(-left)} ago"


def age(since: float, now: float | None = None) -> str:
    """How long ago `since` was; "-" for an unset time (0)."""
    if not since:
        return "-"
    return duration((time.time() if now is None else now) - since)


def pairs(values: Iterable[str] | None, what: str) -> dict[str, str]:
    """`k=v` arguments as a dict; ValueError naming `what` (--label) for one without `=`."""
    out: dict[str, str] = {}
    for value in values or ():
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} takes KEY=VALUE, not {value!r}")
        out[key] = val
    return out


def counts(by_phase: dict[str, int]) -> str:
    """`3 ready, 1 booting` in lifecycle order, then any phase this CLI does not know."""
    known = [p for p in PHASES if by_phase.get(p)]
    other = sorted(p for p in by_phase if p not in PHASES and p != "deleted" and by_phase[p])
    return ", ".join(f"{by_phase[p]} {p}" for p in known + other) or "none"
