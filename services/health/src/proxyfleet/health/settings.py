"""The health service's settings: built once by the service host from flags/env."""

from __future__ import annotations

from dataclasses import dataclass, field

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings, option
from proxyfleet.common.domain.lifecycle import Hysteresis
from proxyfleet.health.loops import LOOPS
from proxyfleet.health.probe import Target, parse_target
from proxyfleet.health.tls import ProbeTlsContext, make_ssl_context


@dataclass(frozen=True, slots=True)
class HealthSettings:
    common: CommonSettings = field(default_factory=CommonSettings)
    """Settings every service shares (NATS, Redis, namespace, providers config, logging)."""
    target: str = "https://www.example.com/"
    """URL fetched through each proxy's tunnel; the dev stack passes its local HTTPS target.
    A JSON answer `{"ip": ...}` gives the proxy's exit address (the API's GET /echo answers
    so: docs/egress.md); any other answer leaves it unknown."""
    ca_file: str = ""
    """PEM bundle that verifies the target's certificate; empty: the system CAs."""
    proxy_ca_bundle: str = ""
    """PEM bundle that verifies the certificates of https proxies (TLS to the proxy, then
    CONNECT inside it; the name checked is the proxy's host); empty: the system CAs."""
    interval: float = 5.0
    """Seconds between two probes of one proxy, shared by every replica."""
    timeout: float = 3.0
    """Seconds one probe may take, connect to target answer. Must be shorter than the
    interval, so a proxy is never probed twice at once."""
    concurrency: int = 256
    """Probes in flight at once in this process."""
    claim_batch: int = 256
    """Most proxies claimed by one claim script call."""
    tick: float = 0.2
    """Seconds between two claims when no more probes are due for this replica (each wait
    drawn between half and one and a half ticks, so replicas do not claim in step)."""
    writers: int = 4
    """Tasks writing probe results to Redis, each a batch at a time (one pipelined round
    trip); bounds this process's Redis connections."""
    stats_interval: float = 5.0
    """Seconds between two refreshes of the proxies-by-phase and backlog gauges."""
    metrics_host: str = option("127.0.0.1", env_aliases=("PROXYFLEET_METRICS_HOST",))
    """Address of the /healthz, /readyz and /metrics server (0.0.0.0: every interface)."""
    metrics_port: int = option(9102, env_aliases=("PROXYFLEET_METRICS_PORT",))
    """Port of the /healthz, /readyz and /metrics server; 0: off."""
    unhealthy_after: int = 3
    """Consecutive failed probes that turn a ready proxy unhealthy."""
    ready_after: int = 2
    """Consecutive good probes that turn an unhealthy proxy ready again."""
    unhealthy_timeout: float = 300.0
    """Seconds a proxy may stay unhealthy: its first failed probe after that fails it
    (reason `unhealthy for <s> s: <probe error>`) and asks for its delete. 0: never."""
    unhealthy_max_share: float = 0.5
    """No proxy is failed for --unhealthy-timeout while more than this share of its
    provider's ready and unhealthy proxies are unhealthy (a target or network outage, not
    that many dead proxies, is then the likelier cause); a single unhealthy proxy always
    may be. 1.0: no such limit."""
    loop: str = LOOPS[0]
    """Event loop: uvloop (libuv; TLS in Cython, the fast default) or asyncio (the standard
    library's)."""
    tls_resume_for: float = 60.0
    """Seconds a TLS session with the target is resumed by later probes after a full
    handshake verified its certificate; every probe still makes a new connection, a new
    CONNECT and a (shorter) handshake. 0: a full handshake on every probe."""

    failed_reprobe_min: float = 30.0
    """Seconds between a failed external proxy's last probe and its next one at first (a
    proxy Proxyfleet did not create is kept when it fails, and probed again; a good probe
    makes it ready). Each wait is as long as the proxy has been failed, so the waits double
    up to --failed-reprobe-max. Longer than --timeout (never two probes of one proxy at
    once). Managed failed proxies are never probed (their delete is under way)."""
    failed_reprobe_max: float = 900.0
    """Longest wait between two probes of a failed external proxy, in seconds."""

    egress_confirm_after: int = 2
    """Probes in a row that must see a new exit address before it replaces the known one
    (a first address counts at once); an address flapping between two values never
    changes it. 1: the first probe that sees it."""
    revoke_on_egress_change: bool = True
    """A confirmed change of a proxy's exit address revokes its active lease (reason
    `egress_changed`): its holder was promised the old address."""

    def __post_init__(self) -> None:
        self.parsed_target()
        checks: list[tuple[bool, str, float, str]] = [
            (self.interval > 0, "--interval", self.interval, "seconds > 0"),
            (0 < self.timeout < self.interval, "--timeout", self.timeout, "0 < s < --interval"),
            (self.concurrency >= 1, "--concurrency", self.concurrency, "an integer >= 1"),
            (self.claim_batch >= 1, "--claim-batch", self.claim_batch, "an integer >= 1"),
            (self.tick > 0, "--tick", self.tick, "seconds > 0"),
            (self.writers >= 1, "--writers", self.writers, "an integer >= 1"),
            (self.stats_interval > 0, "--stats-interval", self.stats_interval, "seconds > 0"),
            (0 <= self.metrics_port <= 65535, "--metrics-port", self.metrics_port, "a port"),
            (self.unhealthy_after >= 1, "--unhealthy-after", self.unhealthy_after, ">= 1"),
            (self.ready_after >= 1, "--ready-after", self.ready_after, ">= 1"),
            (
                self.unhealthy_timeout >= 0,
                "--unhealthy-timeout",
                self.unhealthy_timeout,
                "seconds >= 0",
            ),
            (
                0 < self.unhealthy_max_share <= 1,
                "--unhealthy-max-share",
                self.unhealthy_max_share,
                "0 < share <= 1",
            ),
            (self.tls_resume_for >= 0, "--tls-resume-for", self.tls_resume_for, "seconds >= 0"),
            (
                self.failed_reprobe_min > self.timeout,
                "--failed-reprobe-min",
                self.failed_reprobe_min,
                "seconds > --timeout",
            ),
            (
                self.failed_reprobe_max >= self.failed_reprobe_min,
                "--failed-reprobe-max",
                self.failed_reprobe_max,
                "seconds >= --failed-reprobe-min",
            ),
            (
                self.egress_confirm_after >= 1,
                "--egress-confirm-after",
                self.egress_confirm_after,
                "an integer >= 1",
            ),
        ]
        if self.loop not in LOOPS:
            raise ConfigError(f"--loop: expected one of {', '.join(LOOPS)}, got {self.loop!r}")
        for ok, flag, value, expected in checks:
            if not ok:
                raise ConfigError(f"{flag}: expected {expected}, got {value:g}")

    def parsed_target(self) -> Target:
        try:
            return parse_target(self.target)
        except ValueError as exc:
            raise ConfigError(f"--target: {exc}") from None

    def ssl_context(self) -> ProbeTlsContext | None:
        """The probes' TLS context (None for a plain-HTTP target); ConfigError for a CA
        file that cannot be loaded."""
        if not self.parsed_target().tls:
            return None
        return make_ssl_context(self.ca_file, self.tls_resume_for)

    def proxy_ssl_context(self) -> ProbeTlsContext:
        """The context that verifies https proxies; ConfigError for a bundle that cannot be
        loaded."""
        return make_ssl_context(self.proxy_ca_bundle, flag="--proxy-ca-bundle")

    def with_tls_checked(self) -> HealthSettings:
        """These settings, once the TLS contexts could be built (ConfigError otherwise)."""
        self.ssl_context()
        self.proxy_ssl_context()
        return self

    @property
    def failed_wait(self) -> tuple[float, float]:
        """The shortest and longest waits between two probes of a failed external proxy."""
        return (self.failed_reprobe_min, self.failed_reprobe_max)

    @property
    def hysteresis(self) -> Hysteresis:
        return Hysteresis(
            unhealthy_after=self.unhealthy_after,
            ready_after=self.ready_after,
            unhealthy_timeout=self.unhealthy_timeout,
        )
