"""The local provisioner's settings: the runner's, and how it restarts dead proxies."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.runner import RunnerSettings
from proxyfleet.provisioner_local.restarts import RestartPolicy


@dataclass(frozen=True, slots=True)
class LocalProvisionerSettings(RunnerSettings):
    supervise_interval: float = 2.0
    """Seconds between two checks that every local proxy process still runs; a dead one is
    restarted on its port. 0: no restarts (health alone marks it unhealthy)."""
    restart_max: int = 5
    """Restarts of one proxy within --restart-window; past them it is left to health."""
    restart_window: float = 600.0
    """Seconds over which a proxy's restarts are counted."""
    restart_backoff: float = 1.0
    """Seconds before a proxy's second restart (the first is at once), doubled for each
    further one."""
    restart_backoff_max: float = 60.0
    """Longest pause between two restarts of one proxy."""

    def __post_init__(self) -> None:
        RunnerSettings.__post_init__(self)  # slots dataclass: no zero-argument super()
        checks = [
            (self.supervise_interval >= 0, "--supervise-interval", "seconds >= 0"),
            (self.restart_max >= 0, "--restart-max", "an integer >= 0"),
            (self.restart_window > 0, "--restart-window", "seconds > 0"),
            (self.restart_backoff > 0, "--restart-backoff", "seconds > 0"),
            (
                self.restart_backoff_max >= self.restart_backoff,
                "--restart-backoff-max",
                "at least --restart-backoff",
            ),
        ]
        for ok, flag, expected in checks:
            if not ok:
                raise ConfigError(f"{flag}: expected {expected}")

    @property
    def restart_policy(self) -> RestartPolicy:
        return RestartPolicy(
            max_restarts=self.restart_max,
            window=self.restart_window,
            backoff=self.restart_backoff,
            backoff_max=self.restart_backoff_max,
        )
