"""Settings every service shares. Built once in each service's main() and passed down;
nothing reads the environment at import time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommonSettings:
    nats_url: str = "nats://127.0.0.1:4222"
    """NATS server URL (env NATS_URL)."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Redis URL of the system of record (env REDIS_URL)."""
    installation_id: str = "dev"
    """Marks every resource this installation creates; GC never touches other ids
    (env PROXYFLEET_INSTALLATION_ID)."""
    namespace: str = "pf"
    """Prefix of every Redis key (env PROXYFLEET_REDIS_NAMESPACE)."""
    providers_config: str = "providers.yaml"
    """Path of the providers config file (env PROXYFLEET_PROVIDERS_CONFIG)."""
    log_level: str = "info"
    """debug, info, warning or error (env PROXYFLEET_LOG_LEVEL)."""
    log_format: str = "json"
    """json (production) or console (readable, for the dev stack) (env PROXYFLEET_LOG_FORMAT)."""
