"""API settings: built once by the service host from flags/env and passed down."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from proxyfleet.api.http.forwarded import parse_trusted
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings, option
from proxyfleet.common.domain.tokens import parse_tokens

REFUSAL_WITHOUT_AUTH = (
    "no API token configured: pass --admin-token/--client-token name:secret "
    "(env PROXYFLEET_API_ADMIN_TOKENS/PROXYFLEET_API_CLIENT_TOKENS, comma-separated), "
    "or --insecure-dev to run without authentication on a development machine"
)

LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True, slots=True)
class ApiSettings:
    common: CommonSettings = field(default_factory=CommonSettings)
    """Settings every service shares (NATS and Redis URLs, namespace, providers config, logs)."""
    host: str = "127.0.0.1"
    """Address the HTTP server listens on."""
    port: int = 8080
    """Port the HTTP server listens on."""
    admin_tokens: tuple[str, ...] = option(
        (), flag="--admin-token", env_aliases=("PROXYFLEET_ADMIN_TOKENS",), repr=False
    )
    """Tokens with the admin scope (everything), each `name:secret`: the name (letters,
    digits, `.`, `_`, `-`) shows in logs and lease records, the secret (16+ characters) is
    the bearer token. Repeatable; a value (and the env var) may be a comma-separated list."""
    client_tokens: tuple[str, ...] = option(
        (), flag="--client-token", env_aliases=("PROXYFLEET_CLIENT_TOKENS",), repr=False
    )
    """Tokens with the client scope (leases and GET /v1/providers), each `name:secret` like
    the admin tokens; a client sees only the leases it granted. Repeatable, or
    comma-separated."""
    insecure_dev: bool = option(False, env_aliases=("PROXYFLEET_INSECURE_DEV",))
    """Serve without authentication (every caller is admin). Development only."""
    cooldown: float = option(30.0, env_aliases=("PROXYFLEET_LEASE_COOLDOWN",))
    """Seconds a released or expired proxy rests before it can be granted again."""
    max_lease_ttl: float = option(3600.0, env_aliases=("PROXYFLEET_MAX_LEASE_TTL",))
    """Longest lease a grant or renew may get; longer requests are capped."""
    default_lease_ttl: float = option(300.0, env_aliases=("PROXYFLEET_DEFAULT_LEASE_TTL",))
    """TTL of a grant or renew that names none."""
    ban_seconds: float = option(3600.0, env_aliases=("PROXYFLEET_BAN_SECONDS",))
    """How long a `blocked` report bans the lease's proxy for that target."""
    sweep_interval: float = option(1.0, env_aliases=("PROXYFLEET_SWEEP_INTERVAL",))
    """Seconds between two runs of the sweeper that ends expired leases."""
    idempotency_ttl: float = 86_400.0
    """Seconds a create's Idempotency-Key is remembered (a retry after that creates again)."""
    event_keepalive: float = 15.0
    """Seconds between keep-alive comments on an idle GET /v1/events stream (so proxies
    and load balancers in between do not close it as idle)."""
    max_probe_age: float = 20.0
    """Seconds since a proxy's last good health probe beyond which grants skip it (4x
    health's default --interval, so a stopped health service leaves no dead proxy
    grantable); keep it a few times health's --interval. 0: no check."""

    echo_trusted_proxy: tuple[str, ...] = ()
    """CIDRs of load balancers in front of the API whose X-Forwarded-For GET /echo believes
    (the right-most untrusted address is the caller's). Repeatable, or comma-separated.
    Default none: /echo answers the peer's address."""

    def check(self) -> ApiSettings:
        """These settings; ConfigError naming the setting when they cannot serve."""
        if not (self.admin_tokens or self.client_tokens or self.insecure_dev):
            raise ConfigError(REFUSAL_WITHOUT_AUTH)
        if any(not t.strip() for t in (*self.admin_tokens, *self.client_tokens)):
            raise ConfigError("an API token is empty or blank")
        parse_tokens(self.admin_tokens, self.client_tokens)
        level = self.common.log_level
        if level.lower() not in LOG_LEVELS:
            raise ConfigError(
                f"--log-level: expected one of {', '.join(LOG_LEVELS)}, got {level!r}"
            )
        if self.common.log_format not in ("json", "console"):
            raise ConfigError(
                f"--log-format: expected json or console, got {self.common.log_format!r}"
            )
        try:
            parse_trusted(self.echo_trusted_proxy)
        except ValueError as exc:
            raise ConfigError(f"--echo-trusted-proxy: {exc}") from None
        if not 0 < self.port < 65536:
            raise ConfigError(f"--port: expected 1..65535, got {self.port}")
        if not (math.isfinite(self.cooldown) and self.cooldown >= 0):
            raise ConfigError(f"--cooldown: expected seconds >= 0, got {self.cooldown}")
        for name in (
            "max_lease_ttl",
            "default_lease_ttl",
            "ban_seconds",
            "sweep_interval",
            "idempotency_ttl",
            "event_keepalive",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag}: expected seconds > 0, got {value}")
        if not (math.isfinite(self.max_probe_age) and self.max_probe_age >= 0):
            raise ConfigError(f"--max-probe-age: expected seconds >= 0, got {self.max_probe_age}")
        if self.default_lease_ttl > self.max_lease_ttl:
            raise ConfigError(
                f"--default-lease-ttl ({self.default_lease_ttl}) is longer than "
                f"--max-lease-ttl ({self.max_lease_ttl})"
            )
        return self
