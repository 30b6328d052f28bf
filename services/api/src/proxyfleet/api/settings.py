"""API settings: built once in main() from flags/env and passed down; no env reads here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from proxyfleet.common.errors import ConfigError
from proxyfleet.common.settings import CommonSettings

REFUSAL_WITHOUT_AUTH = (
    "no API token configured: pass --admin-token/--client-token "
    "(env PROXYFLEET_ADMIN_TOKENS/PROXYFLEET_CLIENT_TOKENS, comma-separated), "
    "or --insecure-dev to run without authentication on a development machine"
)

LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True, slots=True)
class ApiSettings:
    common: CommonSettings = field(default_factory=CommonSettings)
    """Settings every service shares (NATS and Redis URLs, namespace, providers config, logs)."""
    host: str = "127.0.0.1"
    """Address the HTTP server listens on (env PROXYFLEET_API_HOST)."""
    port: int = 8080
    """Port the HTTP server listens on (env PROXYFLEET_API_PORT)."""
    admin_tokens: tuple[str, ...] = field(default=(), repr=False)
    """Bearer tokens with the admin scope: everything (env PROXYFLEET_ADMIN_TOKENS)."""
    client_tokens: tuple[str, ...] = field(default=(), repr=False)
    """Bearer tokens with the client scope: leases and GET /v1/providers
    (env PROXYFLEET_CLIENT_TOKENS)."""
    insecure_dev: bool = False
    """Serve without authentication (every caller is admin). Development only
    (env PROXYFLEET_INSECURE_DEV)."""
    cooldown: float = 30.0
    """Seconds a released or expired proxy rests before it can be granted again
    (env PROXYFLEET_LEASE_COOLDOWN)."""
    max_lease_ttl: float = 3600.0
    """Longest lease a grant or renew may get; longer requests are capped
    (env PROXYFLEET_MAX_LEASE_TTL)."""
    default_lease_ttl: float = 300.0
    """TTL of a grant or renew that names none (env PROXYFLEET_DEFAULT_LEASE_TTL)."""
    ban_seconds: float = 3600.0
    """How long a `blocked` report bans the lease's proxy for that target
    (env PROXYFLEET_BAN_SECONDS)."""
    sweep_interval: float = 1.0
    """Seconds between two runs of the sweeper that ends expired leases
    (env PROXYFLEET_SWEEP_INTERVAL)."""

    def check(self) -> None:
        """Raise ConfigError naming the setting when the settings cannot serve."""
        if not (self.admin_tokens or self.client_tokens or self.insecure_dev):
            raise ConfigError(REFUSAL_WITHOUT_AUTH)
        if any(not t.strip() for t in (*self.admin_tokens, *self.client_tokens)):
            raise ConfigError("an API token is empty or blank")
        level = self.common.log_level
        if level.lower() not in LOG_LEVELS:
            raise ConfigError(
                f"--log-level: expected one of {', '.join(LOG_LEVELS)}, got {level!r}"
            )
        if self.common.log_format not in ("json", "console"):
            raise ConfigError(
                f"--log-format: expected json or console, got {self.common.log_format!r}"
            )
        if not 0 < self.port < 65536:
            raise ConfigError(f"--port: expected 1..65535, got {self.port}")
        if not (math.isfinite(self.cooldown) and self.cooldown >= 0):
            raise ConfigError(f"--cooldown: expected seconds >= 0, got {self.cooldown}")
        for name in ("max_lease_ttl", "default_lease_ttl", "ban_seconds", "sweep_interval"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag}: expected seconds > 0, got {value}")
        if self.default_lease_ttl > self.max_lease_ttl:
            raise ConfigError(
                f"--default-lease-ttl ({self.default_lease_ttl}) is longer than "
                f"--max-lease-ttl ({self.max_lease_ttl})"
            )
