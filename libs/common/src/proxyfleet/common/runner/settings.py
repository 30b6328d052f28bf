"""Tuning of the provisioner runner. Defaults suit production; tests shrink the times."""

from __future__ import annotations

import math
from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import option


@dataclass(frozen=True, slots=True)
class RunnerSettings:
    provider: str = option(env_aliases=("PROXYFLEET_PROVIDER",))
    """Name of the provider instance this runner serves (intents proxyfleet.intents.<name>.*)."""
    boot_timeout: float = option(120.0, exposed=False)
    """Seconds a booting proxy has to become healthy (from the providers config); the
    runner stamps `boot_deadline = now + boot_timeout` when the resource is created."""
    ack_wait: float = option(5.0, env_aliases=("PROXYFLEET_ACK_WAIT",))
    """Seconds JetStream waits for an ack or a heartbeat before redelivering an intent to
    another replica: a killed replica's intents are taken over after this. Short, because
    heartbeats keep a slow create alive however long it takes; only a replica that cannot
    heartbeat for this long (a stalled event loop) would see its intent handled twice."""
    heartbeat_interval: float = 1.0
    """Seconds between `in_progress` acks while an intent is handled (at most a third of
    ack_wait, whatever is set here). Only intents in a handler are held: each pull
    subscriber fetches one when it is free, so none waits unheartbeated."""
    max_deliver: int = 8
    """Deliveries of one intent at most. A temporary error on the last one is treated as
    permanent: the proxy fails instead of being retried forever."""
    backoff_initial: float = 1.0
    """Delay before the redelivery that follows the first temporary error (seconds)."""
    backoff_max: float = 30.0
    """Longest delay between two deliveries of one intent (seconds)."""
    backoff_jitter: float = 0.1
    """Random extra share of each delay (0.1: up to +10 %), so retries spread out."""
    concurrency: int = option(8, env_aliases=("PROXYFLEET_CONCURRENCY",))
    """Intents one replica handles at once."""
    fetch_timeout: float = 1.0
    """Seconds one pull request waits for intents; also bounds how fast a stop is noticed."""
    reconcile_interval: float = option(10.0, env_aliases=("PROXYFLEET_RECONCILE_INTERVAL",))
    """Seconds between two passes of the reconciler over this provider's proxies."""
    adopt_interval: float = option(60.0, env_aliases=("PROXYFLEET_ADOPT_INTERVAL",))
    """Seconds between two listings of the provider's resources by the adopter (a call per
    VM on some providers). The marker is still checked every reconcile interval, and while
    it is younger than this (a store reset) every pass lists."""
    adopt_hold: float = 3600.0
    """Seconds a proxy adopted after a store reset waits before its first grant: a lease
    granted before the reset may still be in use until it would have expired. Keep it at
    least the API's --max-lease-ttl (default 3600); 0 grants adopted proxies at once."""
    stale_after: float = option(120.0, env_aliases=("PROXYFLEET_STALE_AFTER",))
    """A pending, provisioning or deleting proxy not updated for this long gets its intent
    published again (a lost message delays work, never loses it). Keep it above the
    total backoff so normal retries are not duplicated."""
    shutdown_grace: float = 10.0
    """Seconds in-flight intents get to finish at stop; the rest are NAKed for redelivery."""
    metrics_host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server (0.0.0.0: every interface)."""
    metrics_port: int = option(0, env_aliases=("PROXYFLEET_METRICS_PORT",))
    """Port of the /healthz, /readyz and /metrics server (0: no server)."""

    def __post_init__(self) -> None:
        positive = {
            "ack_wait": self.ack_wait,
            "heartbeat_interval": self.heartbeat_interval,
            "backoff_initial": self.backoff_initial,
            "fetch_timeout": self.fetch_timeout,
            "reconcile_interval": self.reconcile_interval,
            "adopt_interval": self.adopt_interval,
        }
        for name, value in positive.items():
            if value <= 0:
                raise ConfigError(
                    f"{_flag(name)}: expected a positive number of seconds, got {value}"
                )
        for name in ("max_deliver", "concurrency"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_flag(name)}: expected at least 1, got {getattr(self, name)}")
        if not (math.isfinite(self.adopt_hold) and self.adopt_hold >= 0):
            raise ConfigError(f"--adopt-hold: expected seconds >= 0, got {self.adopt_hold}")
        if self.backoff_max < self.backoff_initial:
            raise ConfigError("--backoff-max: expected at least --backoff-initial")
        if not 0 <= self.metrics_port <= 65535:
            raise ConfigError(f"--metrics-port: expected 0..65535, got {self.metrics_port}")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
