"""The GCP provisioner's settings: the runner's (its 5 s ack-wait included: heartbeats hold
a create however long its operation takes), with its own concurrency and preemption checks."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import option
from proxyfleet.common.runner import RunnerSettings


@dataclass(frozen=True, slots=True)
class GcpProvisionerSettings(RunnerSettings):
    concurrency: int = option(32, env_aliases=("PROXYFLEET_CONCURRENCY",))
    """Intents one replica handles at once (Compute mutations are bounded apart, by the
    config's max_operations_in_flight)."""
    preemption_interval: float = 30.0
    """Seconds between two checks for proxies whose VM Google preempted."""

    def __post_init__(self) -> None:
        RunnerSettings.__post_init__(self)
        if self.preemption_interval <= 0:
            raise ConfigError("--preemption-interval: expected a positive number of seconds")
