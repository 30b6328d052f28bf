"""Pool operator settings: built once by the service host from flags/env and passed down."""

from __future__ import annotations

import re
from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError

_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class PoolOperatorSettings:
    watch_namespaces: tuple[str, ...] = ()
    """Namespaces whose ProxyPools it reconciles (comma-separated); none: its own (the
    service account's in a pod, else the kubeconfig context's)."""
    kubeconfig: str = ""
    """"" uses the in-cluster service account; else the path of a kubeconfig file."""
    context: str = ""
    """Context of the kubeconfig file ("" = its current context)."""
    status_interval: float = 5.0
    """Seconds between two looks at each pool: its status written back to the resource
    (when it changed), its spec declared again if the store lost it."""
    delete_poll: float = 1.0
    """Seconds between two looks at a pool being deleted, until its members are gone."""
    delete_wait: float = 30.0
    """How long one run of the delete handler waits for the pool to go before it hands
    back to kopf (which writes the status and runs it again at once)."""
    crd_poll: float = 5.0
    """Seconds between two looks for the ProxyPool CRD while it is not installed."""
    metrics_host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server (0.0.0.0: every interface)."""
    metrics_port: int = 0
    """Port of the /healthz, /readyz and /metrics server; 0 = off."""

    def __post_init__(self) -> None:
        for ns in self.watch_namespaces:
            if not _NAMESPACE.match(ns):
                raise ConfigError(f"--watch-namespaces: expected namespace names, got {ns!r}")
        checks = [
            (self.status_interval > 0, "--status-interval", self.status_interval, "seconds > 0"),
            (self.delete_poll > 0, "--delete-poll", self.delete_poll, "seconds > 0"),
            (self.delete_wait >= self.delete_poll, "--delete-wait", self.delete_wait,
             f"seconds >= --delete-poll ({self.delete_poll:g})"),
            (self.crd_poll > 0, "--crd-poll", self.crd_poll, "seconds > 0"),
            (0 <= self.metrics_port <= 65535, "--metrics-port", self.metrics_port, "0..65535"),
        ]  # fmt: skip
        for ok, flag, value, expected in checks:
            if not ok:
                raise ConfigError(f"{flag}: expected {expected}, got {value:g}")
