"""What the lease store takes and answers: a grant's request and key, the policy its
scripts apply, and the proxy, renewal and release it hands back."""

from __future__ import annotations

from dataclasses import dataclass, field

from proxyfleet.common.store.egress_holds import Distinct
from proxyfleet.common.wire.models import Scheme, proxy_url


@dataclass(frozen=True, slots=True)
class GrantRequest:
    ttl: float
    holder: str = ""
    target: str = ""
    proxy_id: str = ""
    provider: str = ""
    zone: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    client: str = ""
    """The granting token's name: the lease's owner (renew/report/release check it)."""
    pool: str = ""
    """Only a member of this pool (a refusal is counted for its autoscale)."""
    distinct: Distinct | None = None
    """A proxy whose exit address (`ip`) or network (`subnet`) none of the client's other
    active leases has (docs/egress.md)."""


@dataclass(frozen=True, slots=True)
class GrantKey:
    """A grant's Idempotency-Key (scoped by the caller) and its request's fingerprint."""

    key: str
    fingerprint: str


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    cooldown: float = 30.0
    """Seconds a released proxy rests before it can be granted again."""
    max_ttl: float = 3600.0
    """Longest TTL a grant or renew may ask for; longer requests are capped."""
    ban_seconds: float = 3600.0
    """How long a `blocked` report bans the proxy for that target."""
    retry_after: float = 1.0
    """Retry-After when nothing is available and neither a cooldown nor a lease on a
    proxy the selector takes ends (otherwise: the soonest of those, at most max_ttl)."""
    scan_limit: int = 256
    """Most candidates a grant examines for selectors and bans (bounds its cost)."""
    max_probe_age: float = 0.0
    """Seconds since a proxy's last good probe (`last_ok_at`, written by health) beyond
    which a grant skips it; 0: no check (the API always sets one)."""
    outbox_high_water: int = 0
    """Outbox entries at which grants are refused (503 `events_backlog`; 0: never): the
    common setting `outbox_high_water`."""
    ended_ttl: float = 86400.0
    """Seconds a released or expired lease stays readable (a late renew, report or release
    gets a 409 saying how it ended; after that, 404). A lease costs Redis about half a KB
    while it is kept."""


@dataclass(frozen=True, slots=True)
class GrantedProxy:
    """What a grant hands out about its proxy, read by the grant script itself."""

    id: str
    provider: str
    zone: str
    host: str
    port: int
    username: str
    password: str
    scheme: str = Scheme.HTTP
    """How to speak to it (a Scheme): the gateway dials it so, and its URL says so."""

    def url(self, with_credentials: bool = True) -> str:
        if with_credentials:
            return proxy_url(self.scheme, self.host, self.port, self.username, self.password)
        return proxy_url(self.scheme, self.host, self.port)


@dataclass(frozen=True, slots=True)
class Renewed:
    lease_id: str
    proxy_id: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class Released:
    lease_id: str
    proxy_id: str
