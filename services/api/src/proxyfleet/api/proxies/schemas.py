"""Request and response bodies of /v1/proxies. No password ever leaves through these."""

from __future__ import annotations

from typing import Annotated

import msgspec

from proxyfleet.api.http.fields import Labels, Placement, ProviderName, ZoneName
from proxyfleet.common.wire.models import Phase, Proxy, Scheme, Withheld


class CreateProxies(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    provider: ProviderName
    """The provider instance (a name from the providers config)."""
    count: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 1
    """How many proxies to create (1..1000)."""
    zone: ZoneName | None = None
    """One of the provider's zones; default: its first."""
    labels: Labels = {}
    """Labels every created proxy carries (leases can select on them)."""
    placement: Placement = {}
    """Provider-specific placement every created proxy gets (see the provider's docs)."""


class ProxyOut(msgspec.Struct, kw_only=True):
    """A proxy as the API shows it: everything but its credentials."""

    id: str
    provider: str
    zone: str
    phase: Phase
    gen: int
    labels: dict[str, str]
    placement: dict[str, str]
    host: str
    port: int
    reason: str
    leased: bool
    lease_id: str
    epoch: int
    created_at: float
    updated_at: float
    egress_ip: str
    """Its confirmed exit address, as health's echo target saw it ("" unknown)."""
    egress_net: str
    """The network of egress_ip (an IPv4 /24 or IPv6 /64) that `subnet` exclusivity holds."""
    egress_shared: int
    """How many proxies (this one included) leave through egress_ip: above 1, it is shared."""
    latency_ms: float
    last_probe_at: float
    last_ok_at: float
    """When health last probed it successfully; grants skip a proxy whose last good probe
    is older than the API's --max-probe-age."""
    last_probe_error: str
    pool: str
    """The pool it belongs to; empty for a one-off proxy."""
    withheld: Withheld
    """draining (its pool recycles or shrinks: no new grants, then deleted) or quarantined
    (set aside by an admin or its pool's rule: never granted, kept for inspection); empty
    when it is in rotation."""
    withheld_reason: str
    withheld_at: float
    scheme: Scheme
    """The protocol it speaks: http, https (TLS to the proxy), socks5 or socks5h (the
    proxy resolves names); a lease's URL carries it."""
    external: bool
    """Proxyfleet did not create it (a provider that lists proxies it is given): deleting
    it forgets it and touches nothing outside; a failed one stays failed, probed again,
    until its source drops it."""

    @classmethod
    def of(cls, p: Proxy) -> ProxyOut:
        return cls(
            id=p.id,
            provider=p.provider,
            zone=p.zone,
            phase=p.phase,
            gen=p.gen,
            labels=p.labels,
            placement=p.placement,
            host=p.host,
            port=p.port,
            reason=p.reason,
            leased=bool(p.lease_id),
            lease_id=p.lease_id,
            epoch=p.epoch,
            created_at=p.created_at,
            updated_at=p.updated_at,
            egress_ip=p.egress_ip,
            egress_net=p.egress_net,
            egress_shared=p.egress_shared,
            latency_ms=p.latency_ms,
            last_probe_at=p.last_probe_at,
            last_ok_at=p.last_ok_at,
            last_probe_error=p.last_probe_error,
            pool=p.pool,
            withheld=p.withheld,
            withheld_reason=p.withheld_reason,
            withheld_at=p.withheld_at,
            scheme=p.scheme,
            external=p.external,
        )


class Quarantine(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    """Why it is set aside (shown with the proxy and in its proxy.quarantined event)."""


class ProxyBatch(msgspec.Struct, kw_only=True):
    items: list[ProxyOut]


class ProxyPage(msgspec.Struct, kw_only=True):
    items: list[ProxyOut]
    next_cursor: str | None
    """Pass as `cursor` to get the next page; null on the last page."""
