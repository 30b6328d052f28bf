"""Request and response bodies of /v1/leases. Only the grant carries the proxy's password."""

from __future__ import annotations

from typing import Literal

import msgspec

from proxyfleet.api.http.fields import (
    Epoch,
    Holder,
    Labels,
    LeaseTtl,
    ProviderName,
    ProxyId,
    Target,
    ZoneName,
)
from proxyfleet.common.domain.pool_spec import PoolName
from proxyfleet.common.wire.models import Lease, LeaseOutcome


class GrantLease(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ttl: LeaseTtl | None = None
    """Seconds the lease lasts (default: the API's `--default-lease-ttl`). The server caps
    it at its `--max-lease-ttl` (default 3600 s), whatever this schema's bound: the
    response's `ttl` is what was granted, and `ttl_capped` says it was cut."""
    holder: Holder = ""
    target: Target = ""
    """Destination domain: a proxy banned for it is never granted."""
    proxy_id: ProxyId | None = None
    """This proxy and no other (409 + Retry-After when it is taken or cooling down)."""
    provider: ProviderName | None = None
    zone: ZoneName | None = None
    labels: Labels = {}
    """The granted proxy carries all of these labels."""
    pool: PoolName | None = None
    """A member of this pool (404 when there is no such pool); its refusals (503) count
    towards the pool's autoscale."""
    distinct: Literal["ip", "subnet"] | None = None
    """A proxy whose exit network (`subnet`: its /24 or /64) or exit address (`ip`) none
    of this client's other active leases has; a proxy whose address is not known yet never
    qualifies. 503 (egress_not_distinct) + Retry-After when none does."""


class LeasedProxy(msgspec.Struct, kw_only=True):
    id: str
    host: str
    port: int
    url: str
    """scheme://user:password@host:port, the scheme the proxy speaks (http, https, socks5,
    socks5h): the only place the API shows a password."""
    provider: str
    zone: str
    egress_ip: str = ""
    """The address its traffic leaves from, as health last confirmed it ("" unknown)."""


class GrantedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    epoch: int
    """Fencing token: pass it to renew, report and release."""
    expires_at: float
    granted_at: float
    ttl: float
    """Seconds granted (expires_at - granted_at): the asked TTL, or the server's maximum."""
    ttl_capped: bool
    """True when the asked TTL was above the server's `--max-lease-ttl` and was cut to it."""
    holder: str
    target: str
    proxy: LeasedProxy


class LeaseOut(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    epoch: int
    state: str
    """active, released, expired or revoked."""
    holder: str
    target: str
    client: str
    """The name of the token that granted the lease (its owner)."""
    granted_at: float
    expires_at: float
    reason: str = ""
    """Why a revoked lease was revoked, e.g. `proxy unhealthy: <probe error>`, `proxy
    failed: ...`, `proxy deleted`, `egress_changed`; empty otherwise."""
    egress_ip: str = ""
    """Its proxy's exit address when granted, which the lease holds ("" unknown)."""
    bytes_up: int = 0
    bytes_down: int = 0
    """Bytes the gateway relayed on the lease (client to upstream, and back), once the
    gateway released it; 0 otherwise."""

    @classmethod
    def of(cls, lease: Lease, state: str) -> LeaseOut:
        return cls(
            lease_id=lease.id,
            proxy_id=lease.proxy_id,
            epoch=lease.epoch,
            state=state,
            holder=lease.holder,
            target=lease.target,
            client=lease.client,
            granted_at=lease.granted_at,
            expires_at=lease.expires_at,
            reason=lease.reason,
            egress_ip=lease.egress_ip,
            bytes_up=lease.bytes_up,
            bytes_down=lease.bytes_down,
        )


class LeasePage(msgspec.Struct, kw_only=True):
    items: list[LeaseOut]
    next_cursor: str | None
    """Pass it as `cursor` for the next page; null on the last."""


class RenewLease(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    epoch: Epoch
    ttl: LeaseTtl | None = None
    """New TTL from now (default: the API's `--default-lease-ttl`). The server caps it at
    its `--max-lease-ttl` (default 3600 s): the response's `ttl` and `ttl_capped` say so."""


class RenewedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    epoch: int
    expires_at: float
    ttl: float
    """Seconds granted from now: the asked TTL, or the server's maximum."""
    ttl_capped: bool
    """True when the asked TTL was above the server's `--max-lease-ttl` and was cut to it."""


class ReportLease(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    epoch: Epoch
    outcome: LeaseOutcome
    """ok; blocked (bans the proxy for the target); failed (the proxy is probed again now)."""
    target: Target = ""
    """Default: the lease's target."""


class ReportedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    outcome: LeaseOutcome
    target: str


class ReleaseLease(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    epoch: Epoch


class ReleasedLease(msgspec.Struct, kw_only=True):
    lease_id: str
    proxy_id: str
    state: str = "released"
