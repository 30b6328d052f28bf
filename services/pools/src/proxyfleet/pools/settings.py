"""Pool controller settings: built once by the service host from flags/env and passed down."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class PoolsSettings:
    interval: float = 2.0
    """Seconds between two passes over every pool (each pass compares every pool with its
    members and acts: level-triggered, so a lost message or a crash only delays work)."""
    lock_ttl: float = 0.0
    """Seconds a replica's hold on a pool lasts without a renewal (0: three --interval, at
    least 5 s). The replica holding a pool runs its passes; another takes over within this
    once the holder is gone."""
    status_ttl: float = 0.0
    """Seconds a pool's status is kept without a new pass (0: ten --interval, at least
    30 s): a status nobody renews goes, rather than show old figures as current."""
    apply_config: bool = True
    """Apply the providers config's `pools:` section at start and on every pass (and delete
    the pools that file declared and no longer does)."""
    metrics_host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server (0.0.0.0: every interface)."""
    metrics_port: int = 0
    """Port of the /healthz, /readyz and /metrics server; 0 = off."""

    @property
    def hold_ttl(self) -> float:
        """--lock-ttl in effect."""
        return self.lock_ttl or max(5.0, 3 * self.interval)

    @property
    def status_keep(self) -> float:
        """--status-ttl in effect."""
        return self.status_ttl or max(30.0, 10 * self.interval)

    def __post_init__(self) -> None:
        checks = [
            (self.interval > 0, "--interval", self.interval, "seconds > 0"),
            (
                self.lock_ttl == 0 or self.lock_ttl > self.interval,
                "--lock-ttl",
                self.lock_ttl,
                f"0 or seconds > --interval ({self.interval:g})",
            ),
            (self.status_ttl >= 0, "--status-ttl", self.status_ttl, "seconds >= 0"),
            (0 <= self.metrics_port <= 65535, "--metrics-port", self.metrics_port, "0..65535"),
        ]
        for ok, flag, value, expected in checks:
            if not ok:
                raise ConfigError(f"{flag}: expected {expected}, got {value:g}")
