"""What a grant and a release do once their input is valid, and what they answer: shared
by the Litestar handlers and the lease fast path (proxyfleet.api.fastpath), so both give
the same answer. No web framework here."""

from __future__ import annotations

from proxyfleet.api.leases.schemas import GrantedLease, GrantLease, LeasedProxy, ReleasedLease
from proxyfleet.api.leases.service import LeaseService
from proxyfleet.common.domain.tokens import Principal
from proxyfleet.common.store import GrantRequest


async def grant_lease(
    service: LeaseService, body: GrantLease, caller: Principal, idempotency_key: str | None
) -> GrantedLease:
    """Grant what `body` asks for `caller`; domain errors as LeaseService.grant raises them."""
    ttl, capped = service.granted_ttl(body.ttl)
    grant = await service.grant(
        GrantRequest(
            ttl=ttl,
            holder=body.holder,
            target=body.target.lower(),
            proxy_id=body.proxy_id or "",
            provider=body.provider or "",
            zone=body.zone or "",
            labels=dict(body.labels),
            client=caller.name,
            pool=body.pool or "",
            distinct=body.distinct,
        ),
        idempotency_key=idempotency_key,
        body=body,
    )
    lease, proxy = grant.lease, grant.proxy
    return GrantedLease(
        lease_id=lease.id,
        epoch=lease.epoch,
        expires_at=lease.expires_at,
        granted_at=lease.granted_at,
        ttl=ttl,
        ttl_capped=capped,
        holder=lease.holder,
        target=lease.target,
        proxy=LeasedProxy(
            id=proxy.id,
            host=proxy.host,
            port=proxy.port,
            url=proxy.url(with_credentials=True),
            provider=proxy.provider,
            zone=proxy.zone,
            egress_ip=lease.egress_ip,
        ),
    )


async def release_lease(
    service: LeaseService, lease_id: str, epoch: int, caller: Principal
) -> ReleasedLease:
    released = await service.release(lease_id, epoch, caller)
    return ReleasedLease(lease_id=lease_id, proxy_id=released.proxy_id)
