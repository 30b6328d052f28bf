"""The static provisioner's settings: the runner's, and how often it syncs its sources."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.runner import RunnerSettings


@dataclass(frozen=True, slots=True)
class StaticProvisionerSettings(RunnerSettings):
    sync_interval: float = 1.0
    """Seconds between two syncs: the runtime-added entries' version is read, sources whose
    refresh is due are read, drained proxies whose lease ended are forgotten."""
    source_timeout: float = 10.0
    """Seconds one read of a URL source may take; longer is a failed load."""
    source_max_bytes: int = 4_000_000
    """Largest source read; a bigger one is a failed load."""

    def __post_init__(self) -> None:
        RunnerSettings.__post_init__(self)  # slots dataclass: no zero-argument super()
        if self.sync_interval <= 0:
            raise ConfigError("--sync-interval: expected seconds > 0")
        if self.source_timeout <= 0:
            raise ConfigError("--source-timeout: expected seconds > 0")
        if self.source_max_bytes < 1:
            raise ConfigError("--source-max-bytes: expected at least 1")
