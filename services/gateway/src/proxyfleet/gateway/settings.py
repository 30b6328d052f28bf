"""Gateway settings: built once by the service host from flags/env and passed down."""

from __future__ import annotations

import math
from dataclasses import dataclass

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import option
from proxyfleet.common.domain.tokens import parse_tokens
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.gateway.client_limits import ClientLimit, default_limit, per_client
from proxyfleet.gateway.username import MAX_SESSTIME_MINUTES


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    host: str = "127.0.0.1"
    """Address the proxy endpoint listens on (0.0.0.0: every interface)."""
    port: int = 8899
    """Port of the proxy endpoint (0: a free one, logged at start)."""
    socks_port: int = 0
    """Port of the SOCKS5 listener (RFC 1928 with username/password auth, CONNECT only), on
    --host beside the HTTP one; 0: none."""
    reuse_port: bool = False
    """Listen with SO_REUSEPORT, so several gateway processes on one host share --port (and
    --socks-port) and the kernel spreads new connections over them (one event loop, one
    core each)."""
    client_tokens: tuple[str, ...] = option(
        (), flag="--client-token", env_aliases=("PROXYFLEET_CLIENT_TOKENS",), repr=False
    )
    """The API's client tokens, each `name:secret`: a client sends the secret as its proxy
    password; its leases are the token's, as if granted through the API. Repeatable, or
    comma-separated."""
    lease_ttl: float = 60.0
    """TTL of a connection's lease, renewed while the connection is open."""
    session_minutes: int = 10
    """Minutes a session lives when its username names no `sesstime`."""
    session_idle: float = 300.0
    """Seconds a session's lease outlives its last connection; then it expires."""
    tunnel_idle: float = 600.0
    """Seconds a tunnel may pass no byte either way before the gateway closes it."""
    keepalive_idle: float = 60.0
    """Seconds a plain-HTTP client connection may wait for its next request after a
    response (keep-alive) before the gateway closes it, ending its lease."""
    max_connections: int = 0
    """Most client connections served at once; more are answered 503 with Retry-After.
    0: as many as the open-file limit allows (two descriptors each), which the gateway
    raises to its hard limit at start."""
    client_max_connections: int = 0
    """Most connections one client token has open at once, over every replica sharing the
    Redis (more are answered 429); 0: no limit. Per token: --client-limit."""
    client_max_leases: int = 0
    """Most leases one client token's connections hold at once (a session's lease counts
    once); 0: no limit."""
    client_connection_rate: float = 0.0
    """New connections per second one client token may open (a token bucket, shared by
    the replicas); 0: no limit."""
    client_connection_burst: int = 0
    """New connections a client token may open at once after a quiet spell (the bucket's
    size); 0: a second's worth of --client-connection-rate."""
    client_bytes_per_day: str = ""
    """Bytes a client token may relay (both ways) in a UTC day, with a unit (10GB,
    500MiB); then new connections get 429 until midnight UTC. Empty: no limit."""
    client_limit: tuple[str, ...] = option((), flag="--client-limit")
    """One token's limits over the defaults above: `NAME:key=value,...`, keys
    connections, leases, rate, burst, bytes_per_day (`none`: no limit). Repeatable."""
    limits_sync_interval: float = 0.2
    """Seconds between two syncs of this replica's client counts and bytes with Redis
    (one script call each): how stale the other replicas' counts may be."""
    drain_seconds: float = 20.0
    """Seconds a stopping gateway lets its open connections finish: it accepts no new ones
    (and its /readyz is gone), still renews and follows their leases, then closes the
    rest. Keep it below the pod's terminationGracePeriodSeconds (30 by default)."""
    header_timeout: float = 10.0
    """Seconds a client has to send its request head (then 408)."""
    connect_timeout: float = 5.0
    """Seconds to reach the upstream proxy (its TLS handshake for `https`), then again to
    get its answer to CONNECT (or to finish the SOCKS5 dialogue)."""
    upstream_ca_bundle: str = ""
    """CA certificates (a PEM file) that verify the certificates of `https` upstream
    proxies (TLS to the proxy, then CONNECT inside); empty: the system's store."""
    max_header_bytes: int = 16_384
    """Largest request (or upstream response) head, in bytes (then 431)."""
    blocked_statuses: str = "401,403,429"
    """Statuses of a plain-HTTP response that report the lease `blocked` for its target
    (comma-separated; empty: none)."""
    cooldown: float = option(30.0, env_aliases=("PROXYFLEET_LEASE_COOLDOWN",))
    """Seconds a released proxy rests before it can be granted again (as the API's)."""
    max_lease_ttl: float = option(3600.0, env_aliases=("PROXYFLEET_MAX_LEASE_TTL",))
    """Longest lease a grant or renew may get (as the API's)."""
    ban_seconds: float = option(3600.0, env_aliases=("PROXYFLEET_BAN_SECONDS",))
    """How long a `blocked` report bans the proxy for that target (as the API's)."""
    max_probe_age: float = 20.0
    """Seconds since a proxy's last good probe beyond which grants skip it (as the API's)."""
    ended_lease_ttl: float = 600.0
    """Seconds a connection's lease stays readable after it ended (a late report through
    the API gets a 409 saying so; then 404). Shorter than the API's day: a busy gateway
    ends a lease per connection, and each kept one costs Redis about half a KB."""
    sweep_interval: float = 1.0
    """Seconds between two runs of the sweeper that ends expired leases (safe beside the
    API's own sweepers)."""
    metrics_host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server (0.0.0.0: every interface)."""
    metrics_port: int = 9104
    """Port of the /healthz, /readyz and /metrics server; 0: off."""

    def __post_init__(self) -> None:
        if not self.client_tokens:
            raise ConfigError("no client token: pass --client-token name:secret (the API's)")
        parse_tokens((), self.client_tokens)
        self.client_limits()
        self.blocked()
        positive = [
            ("--lease-ttl", self.lease_ttl),
            ("--session-idle", self.session_idle),
            ("--tunnel-idle", self.tunnel_idle),
            ("--keepalive-idle", self.keepalive_idle),
            ("--header-timeout", self.header_timeout),
            ("--connect-timeout", self.connect_timeout),
            ("--max-lease-ttl", self.max_lease_ttl),
            ("--sweep-interval", self.sweep_interval),
            ("--ended-lease-ttl", self.ended_lease_ttl),
            ("--limits-sync-interval", self.limits_sync_interval),
        ]
        for flag, value in positive:
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{flag}: expected seconds > 0, got {value:g}")
        at_least_zero = [
            ("--cooldown", self.cooldown),
            ("--ban-seconds", self.ban_seconds),
            ("--drain-seconds", self.drain_seconds),
        ]
        for flag, value in at_least_zero:
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{flag}: expected seconds >= 0, got {value:g}")
        if self.max_connections < 0:
            raise ConfigError("--max-connections: expected 0 (from the open-file limit) or more")
        if not 1 <= self.session_minutes <= MAX_SESSTIME_MINUTES:
            raise ConfigError(f"--session-minutes: expected 1-{MAX_SESSTIME_MINUTES}")
        if not 0 <= self.port <= 65535 or not 0 <= self.metrics_port <= 65535:
            raise ConfigError("--port and --metrics-port: expected 0..65535")
        if not 0 <= self.socks_port <= 65535:
            raise ConfigError("--socks-port: expected 0 (none) or a port, 1..65535")
        if not 1024 <= self.max_header_bytes <= 1_048_576:
            raise ConfigError("--max-header-bytes: expected 1024..1048576")

    def client_limits(self) -> dict[str, ClientLimit]:
        """Each client token's limits; ConfigError naming the setting at fault."""
        default = default_limit(
            self.client_max_connections,
            self.client_max_leases,
            self.client_connection_rate,
            self.client_connection_burst,
            self.client_bytes_per_day.strip(),
        )
        names = tuple(t.name for t in parse_tokens((), self.client_tokens))
        return per_client(default, self.client_limit, names)

    def blocked(self) -> frozenset[int]:
        """The statuses in --blocked-statuses; ConfigError when one is not a status."""
        out: set[int] = set()
        for part in self.blocked_statuses.split(","):
            if not (text := part.strip()):
                continue
            if not text.isdigit() or not 100 <= int(text) <= 599:
                raise ConfigError(f"--blocked-statuses: {text!r} is not an HTTP status")
            out.add(int(text))
        return frozenset(out)

    def policy(self, outbox_high_water: int = 0) -> LeasePolicy:
        return LeasePolicy(
            outbox_high_water=outbox_high_water,
            cooldown=self.cooldown,
            max_ttl=self.max_lease_ttl,
            ban_seconds=self.ban_seconds,
            max_probe_age=self.max_probe_age,
            ended_ttl=self.ended_lease_ttl,
        )
