"""Garbage-collector tuning of the API process (A10 in docs/decisions/api.md)."""

from __future__ import annotations

import gc

GC_THRESHOLDS = (20_000, 50, 100)
"""Collect the young generation every 20,000 net allocations (Python's default: 700)."""


def tune_gc() -> None:
    """Freeze what start-up built (modules, the app: never garbage) so full collections
    skip it, and collect less often. Under load, full collections of the default settings
    paused the server for up to 140 ms, 20 times in 30 s (docs/performance.md)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
