"""What the API returns, decoded tolerantly: unknown fields are ignored and fields a server
may not send have defaults, so a newer (or slightly older) server still decodes."""

from __future__ import annotations

from typing import Any

import msgspec


class Proxy(msgspec.Struct, kw_only=True):
    """A proxy as GET /v1/proxies shows it (never its credentials)."""

    id: str
    provider: str
    zone: str
    phase: str
    """pending, provisioning, booting, ready, unhealthy, deleting, deleted or failed."""
    host: str = ""
    port: int = 0
    gen: int = 0
    labels: dict[str, str] = {}
    placement: dict[str, str] = {}
    reason: str = ""
    leased: bool = False
    lease_id: str = ""
    epoch: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    egress_ip: str = ""
    egress_net: str = ""
    """The network of egress_ip (IPv4 /24, IPv6 /64)."""
    egress_shared: int = 0
    """Proxies leaving through egress_ip, this one included: above 1, shared."""
    latency_ms: float = 0.0
    last_probe_at: float = 0.0
    last_ok_at: float = 0.0
    last_probe_error: str = ""
    pool: str = ""
    """The pool it belongs to; empty for a one-off proxy."""
    withheld: str = ""
    """draining or quarantined (never granted); empty when in rotation."""
    withheld_reason: str = ""
    withheld_at: float = 0.0
    scheme: str = "http"
    """http, https, socks5 or socks5h: the protocol it speaks."""
    external: bool = False
    """Proxyfleet did not create it (a provider that lists proxies it is given)."""


class ProxyPage(msgspec.Struct, kw_only=True):
    items: list[Proxy]
    next_cursor: str | None = None
    """Pass as `cursor` for the next page; None on the last page."""


class ProxyBatch(msgspec.Struct, kw_only=True):
    items: list[Proxy]


class LeasedProxy(msgspec.Struct, kw_only=True):
    """The proxy of a granted lease, with its credentials (only a grant shows them)."""

    id: str
    host: str
    port: int
    url: str
    """scheme://user:password@host:port (http, https, socks5 or socks5h)."""
    provider: str = ""
    zone: str = ""
    egress_ip: str = ""
    """The address its traffic leaves from ("" unknown, or a server that does not say)."""


class Lease(msgspec.Struct, kw_only=True):
    """A granted lease (POST /v1/leases)."""

    lease_id: str
    epoch: int
    """Fencing token: renew, report and release pass it."""
    expires_at: float
    granted_at: float
    proxy: LeasedProxy
    holder: str = ""
    target: str = ""
    ttl: float = 0.0
    """Seconds granted (0 from a server that does not say)."""
    ttl_capped: bool = False
    """True when the server's --max-lease-ttl cut the TTL asked for."""


class LeaseState(msgspec.Struct, kw_only=True):
    """A lease as GET /v1/leases/{id} shows it."""

    lease_id: str
    proxy_id: str
    epoch: int
    state: str
    """active, released, expired or revoked."""
    expires_at: float
    granted_at: float = 0.0
    holder: str = ""
    target: str = ""
    client: str = ""
    reason: str = ""
    egress_ip: str = ""
    """The exit address the lease holds ("" unknown)."""
    bytes_up: int = 0
    bytes_down: int = 0
    """What the gateway relayed on it, once the gateway released it."""


class LeasePage(msgspec.Struct, kw_only=True):
    """GET /v1/leases: active leases, soonest expiry first."""

    items: list[LeaseState]
    next_cursor: str | None = None
    """Pass as `cursor` for the next page; None on the last page."""


class RenewedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    epoch: int
    expires_at: float
    ttl: float = 0.0
    ttl_capped: bool = False


class ReportedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    outcome: str
    target: str = ""


class ReleasedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    state: str = "released"


class Provider(msgspec.Struct, kw_only=True):
    name: str
    type: str
    zones: list[str] = []
    counts: dict[str, int] = {}
    """Proxies by phase."""
    max_proxies: int | None = None


class ProviderList(msgspec.Struct, kw_only=True):
    items: list[Provider]


class ProviderEntry(msgspec.Struct, kw_only=True):
    """A proxy added to a provider at run time; its url's password is masked (***)."""

    id: str
    url: str
    zone: str = ""
    labels: dict[str, str] = {}
    name: str = ""


class ProviderEntryList(msgspec.Struct, kw_only=True):
    items: list[ProviderEntry]


class PoolCondition(msgspec.Struct, kw_only=True):
    type: str
    """Ready, Progressing, CapacityExceeded, ProviderFailing, OwnerConflict."""
    status: bool
    reason: str = ""
    message: str = ""
    since: float = 0.0


class PoolDecision(msgspec.Struct, kw_only=True):
    """The pool controller's last scaling decision and why."""

    time: float
    action: str
    """scale_up or scale_down."""
    from_size: int = 0
    to_size: int = 0
    reason: str = ""


class PoolStatus(msgspec.Struct, kw_only=True):
    """What the pool's controller saw on its last pass."""

    desired: int = 0
    ready: int = 0
    """Ready members in rotation (not draining, not quarantined)."""
    leased: int = 0
    free: int = 0
    starting: int = 0
    unhealthy: int = 0
    draining: int = 0
    quarantined: int = 0
    surge: int = 0
    oldest_age: float = 0.0
    """Seconds since the oldest member in rotation was created."""
    by_provider: dict[str, int] = {}
    by_zone: dict[str, int] = {}
    observed_gen: int = 0
    updated_at: float = 0.0
    controller: str = ""
    last_decision: PoolDecision | None = None
    autoscale: dict[str, Any] | None = None
    """What the last autoscale look saw (free, starting, refused, targets)."""
    conditions: list[PoolCondition] = []


class Pool(msgspec.Struct, kw_only=True):
    """A pool as GET /v1/pools/{name} shows it: its spec as declared (defaults left out),
    who declares it, and its controller's last status (None before its first pass)."""

    name: str
    spec: dict[str, Any]
    owner: str
    """api, config or kubernetes: only that source may change or delete it."""
    owner_ref: str = ""
    gen: int = 0
    desired: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    deleting: bool = False
    status: PoolStatus | None = None


class PoolList(msgspec.Struct, kw_only=True):
    items: list[Pool]


class KeptProxies(msgspec.Struct, kw_only=True):
    """A pool removed with keep_proxies: its members stay, as one-off proxies."""

    name: str
    kept_proxies: bool = True


class EventData(msgspec.Struct, kw_only=True):
    """What an event says besides its envelope; only the fields of its kind are set.
    proxy.*: `from_` (previous phase), `gen`, `reason`, `zone` and `from_zone` (when the
    proxy moved to another zone: a create that failed over); lease.*: `epoch`, `client` (the
    lease's owner), `by` (the token that made the call; absent for an expiry or a
    revocation); granted: `holder`, `target`, `expires_at`; renewed: `expires_at`;
    reported: `outcome`, `target`; revoked: `reason`."""

    from_: str | None = msgspec.field(default=None, name="from")
    gen: int | None = None
    reason: str | None = None
    zone: str | None = None
    from_zone: str | None = None
    epoch: int | None = None
    holder: str | None = None
    target: str | None = None
    expires_at: float | None = None
    outcome: str | None = None
    client: str | None = None
    by: str | None = None


class Event(msgspec.Struct, kw_only=True):
    """A lifecycle or lease event from GET /v1/events, exactly as published on NATS."""

    type: str
    """e.g. proxy.ready, lease.granted."""
    id: str
    time: float
    proxy_id: str
    schema_version: int = 1
    lease_id: str = ""
    provider: str = ""
    pool: str = ""
    data: EventData = msgspec.field(default_factory=EventData)


class Probe(msgspec.Struct, kw_only=True):
    """One health probe result (GET /v1/events with probes=true)."""

    proxy_id: str
    time: float
    ok: bool
    latency_ms: float = 0.0
    error: str = ""
    egress_ip: str = ""


class Gap(msgspec.Struct, kw_only=True):
    """The API dropped events this reader was too slow to take (GET /v1/events): refetch
    what matters (list_proxies, list_leases)."""

    dropped: int = 0
