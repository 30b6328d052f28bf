"""The GC's Prometheus metrics (served on /metrics with every other proxyfleet metric)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

DELETIONS = Counter(
    "proxyfleet_gc_deletions_total",
    "Orphaned resources GC asked to delete (dry_run=true: would have), by provider and reason.",
    ["provider", "reason", "dry_run"],
)
RUNS = Counter(
    "proxyfleet_gc_runs_total",
    "GC rounds by result: ok (every provider collected), partial (some skipped), "
    "failed (none collected).",
    ["result"],
)
LAST_RUN = Gauge(
    "proxyfleet_gc_last_run_timestamp_seconds",
    "When the last GC round ended, in seconds since the epoch.",
)
SKIPS = Counter(
    "proxyfleet_gc_provider_skips_total",
    "Providers skipped for a round (nothing deleted for them), by cause: no_answer, "
    "error_answer, bad_answer, error.",
    ["provider", "cause"],
)
CAPPED = Counter(
    "proxyfleet_gc_capped_total",
    "Rounds in which a provider had more orphans than --max-deletions (the rest waited).",
    ["provider"],
)
REFUSALS = Counter(
    "proxyfleet_gc_refusals_total",
    "Rounds in which GC refused to delete anything for a provider, by reason: no_marker "
    "(the registry has no installation marker: reset or wrong Redis), foreign_marker, "
    "share (more than --max-delete-share of the provider's resources).",
    ["provider", "reason"],
)
ROUNDS_SKIPPED = Counter(
    "proxyfleet_gc_rounds_skipped_total",
    "Provider rounds this replica did not run, by reason: held (another replica holds the "
    "provider's round lock and runs its rounds), lost (the lock was lost mid-round, e.g. "
    "a pause past --round-lock-ttl: no delete was sent from then on).",
    ["provider", "reason"],
)
