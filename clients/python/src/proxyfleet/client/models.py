"""What the API returns, decoded tolerantly: unknown fields are ignored and fields a server
may not send have defaults, so a newer (or slightly older) server still decodes."""

from __future__ import annotations

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
    latency_ms: float = 0.0
    last_probe_at: float = 0.0
    last_ok_at: float = 0.0
    last_probe_error: str = ""


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
    """http://user:password@host:port."""
    provider: str = ""
    zone: str = ""


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
