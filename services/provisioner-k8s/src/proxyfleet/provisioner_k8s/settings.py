"""The Kubernetes provisioner's settings: the runner's, and the adapter's timings."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import option
from proxyfleet.common.runner import RunnerSettings


@dataclass(frozen=True, slots=True)
class Tuning:
    """How the adapter talks to the API server (the service's flags of the same names)."""

    api_threads: int = 16
    """Worker threads for API calls (the client blocks); also its connection pool size."""
    request_timeout: float = 30.0
    """Seconds one API call may take (connect and read)."""
    address_timeout: float = 120.0
    """Seconds a create waits for the pod IP (or the Service's address) before retrying
    later (an image pull can take this long)."""
    watch_timeout: float = 300.0
    """Seconds one watch request lasts before it is resumed from its resourceVersion."""
    relist_interval: float = 600.0
    """Seconds between two full lists of the pods (a safety net under the watch)."""
    sweep_min_age: float = 600.0
    """Secrets, ConfigMaps and Services without their pod younger than this stay."""
    sweep_interval: float = 300.0
    """Least seconds between two sweeps (they run when GC asks for the resources)."""
    sweep_dry_run: bool = False
    """Report the orphans the sweeper would delete without deleting them."""

    def __post_init__(self) -> None:
        if self.api_threads < 1:
            raise ConfigError(f"--api-threads: expected at least 1, got {self.api_threads}")
        for name in ("request_timeout", "address_timeout", "watch_timeout", "relist_interval",
                     "sweep_interval"):  # fmt: skip
            if getattr(self, name) <= 0:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag}: expected a positive number of seconds")
        if self.sweep_min_age < 0:
            raise ConfigError("--sweep-min-age: expected seconds >= 0")


_DEFAULT = Tuning()


@dataclass(frozen=True, slots=True)
class K8sProvisionerSettings(RunnerSettings):
    concurrency: int = option(32, env_aliases=("PROXYFLEET_CONCURRENCY",))
    """Intents one replica handles at once (each create waits for its pod's IP)."""
    api_threads: int = _DEFAULT.api_threads
    """Worker threads for API calls (the client blocks); also its connection pool size."""
    request_timeout: float = _DEFAULT.request_timeout
    """Seconds one API call may take (connect and read)."""
    address_timeout: float = _DEFAULT.address_timeout
    """Seconds a create waits for the pod IP (or the Service's address) before retrying."""
    watch_timeout: float = _DEFAULT.watch_timeout
    """Seconds one watch request lasts before it is resumed from its resourceVersion."""
    relist_interval: float = _DEFAULT.relist_interval
    """Seconds between two full lists of the pods (a safety net under the watch)."""
    sweep_min_age: float = _DEFAULT.sweep_min_age
    """Secrets, ConfigMaps and Services without their pod younger than this stay."""
    sweep_interval: float = _DEFAULT.sweep_interval
    """Least seconds between two sweeps (they run when GC asks for the resources)."""
    sweep_dry_run: bool = _DEFAULT.sweep_dry_run
    """Report the orphans the sweeper would delete without deleting them."""
    failure_check_interval: float = 10.0
    """Seconds between two checks of booting and ready proxies against their pods (a
    failure the watch reports wakes the check at once)."""

    def __post_init__(self) -> None:
        RunnerSettings.__post_init__(self)
        self.tuning()  # the same checks
        if self.failure_check_interval <= 0:
            raise ConfigError("--failure-check-interval: expected a positive number of seconds")

    def tuning(self) -> Tuning:
        return Tuning(
            api_threads=self.api_threads,
            request_timeout=self.request_timeout,
            address_timeout=self.address_timeout,
            watch_timeout=self.watch_timeout,
            relist_interval=self.relist_interval,
            sweep_min_age=self.sweep_min_age,
            sweep_interval=self.sweep_interval,
            sweep_dry_run=self.sweep_dry_run,
        )
