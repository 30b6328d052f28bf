"""GC settings: built once by the service host from flags/env and passed down."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError

ONCE_CONNECT_TIMEOUT = 10.0
"""With --once, give up (exit 1) when NATS cannot be reached this long; a service waits."""


@dataclass(frozen=True, slots=True)
class GcSettings:
    interval: float = 30.0
    """Seconds between two collection rounds."""
    min_age: float = 300.0
    """A resource younger than this many seconds is never deleted, whatever the registry
    says: it may belong to a proxy being created right now."""
    dry_run: bool = False
    """Log what would be deleted, one line per resource, and publish nothing."""
    max_deletions: int = 100
    """Most deletions asked for per provider per round, oldest first. A safety cap: a wrong
    Redis URL or namespace makes every resource look orphaned, and this bounds the damage
    to one round's worth while the warning and metric say so."""
    max_delete_share: float = 0.5
    """Largest share of a provider's resources one round may delete (one deletion is
    always allowed); a round planning more deletes nothing, logs `gc.refused` and counts
    proxyfleet_gc_refusals_total. 1.0 lifts the limit (after a deliberate mass delete)."""
    request_timeout: float = 5.0
    """Seconds to wait for a provisioner to answer the resources request; a provider that
    does not answer in time is skipped for the round."""
    round_lock_ttl: float = 0.0
    """Seconds a replica's lock on a provider's rounds lasts without a renewal (0: twice
    --interval plus --request-timeout, 65 s by default). The replica running a provider's
    rounds renews it at every step and keeps it between rounds; another replica skips
    that provider's rounds meanwhile, and takes over within this ttl plus one interval
    once the holder is gone. Set explicitly, it must exceed --interval plus
    --request-timeout."""
    metrics_host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server (0.0.0.0: every interface)."""
    metrics_port: int = 0
    """Port of the /healthz, /readyz and /metrics server; 0 = off."""
    once: bool = False
    """Run one round and exit (exit code 1 if a provider was skipped; gives up after
    10 s without NATS)."""

    @property
    def lock_ttl(self) -> float:
        """--round-lock-ttl in effect."""
        return self.round_lock_ttl or 2 * self.interval + self.request_timeout

    def __post_init__(self) -> None:
        checks = [
            (self.interval > 0, "--interval", self.interval, "seconds > 0"),
            (self.min_age >= 0, "--min-age", self.min_age, "seconds >= 0"),
            (self.max_deletions >= 1, "--max-deletions", self.max_deletions, "at least 1"),
            (
                0 < self.max_delete_share <= 1,
                "--max-delete-share",
                self.max_delete_share,
                "a share in (0, 1]",
            ),
            (self.request_timeout > 0, "--request-timeout", self.request_timeout, "> 0"),
            (
                self.round_lock_ttl == 0
                or self.round_lock_ttl > self.interval + self.request_timeout,
                "--round-lock-ttl",
                self.round_lock_ttl,
                f"0 or seconds > --interval + --request-timeout "
                f"({self.interval + self.request_timeout:g})",
            ),
            (0 <= self.metrics_port <= 65535, "--metrics-port", self.metrics_port, "0..65535"),
        ]
        for ok, flag, value, expected in checks:
            if not ok:
                raise ConfigError(f"{flag}: expected {expected}, got {value:g}")
