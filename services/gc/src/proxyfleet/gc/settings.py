"""GC settings: built once in main() from flags/env and passed down; no env reads here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GcSettings:
    interval: float = 30.0
    """Seconds between two collection rounds (env PROXYFLEET_GC_INTERVAL)."""
    min_age: float = 300.0
    """A resource younger than this many seconds is never deleted, whatever the registry
    says: it may belong to a proxy being created right now (env PROXYFLEET_GC_MIN_AGE)."""
    dry_run: bool = False
    """Log what would be deleted, one line per resource, and publish nothing
    (env PROXYFLEET_GC_DRY_RUN)."""
    max_deletions: int = 100
    """Most deletions asked for per provider per round, oldest first. A safety cap: a wrong
    Redis URL or namespace makes every resource look orphaned, and this bounds the damage
    to one round's worth while the warning and metric say so (env PROXYFLEET_GC_MAX_DELETIONS)."""
    request_timeout: float = 5.0
    """Seconds to wait for a provisioner to answer the resources request; a provider that
    does not answer in time is skipped for the round (env PROXYFLEET_GC_REQUEST_TIMEOUT)."""
    metrics_host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server (env PROXYFLEET_GC_METRICS_HOST)."""
    metrics_port: int = 0
    """Port of the /healthz, /readyz and /metrics server; 0 = off
    (env PROXYFLEET_GC_METRICS_PORT)."""
