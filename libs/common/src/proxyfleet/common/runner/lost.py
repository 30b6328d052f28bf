"""The proxies a lost-resource watcher checks, and what it found lost. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Running:
    """A proxy the registry says has its resource (booting, ready or unhealthy)."""

    proxy_id: str
    gen: int
    resource_id: str


@dataclass(frozen=True, slots=True)
class Lost:
    """A running proxy whose resource vanished or failed for good."""

    proxy: Running
    reason: str
    """Why, as the proxy's failure reason."""
    cause: str
    """A short name of why, for a metric label (gone, stopped, OOMKilled, ...)."""
