"""Lease operations: each is one atomic store script, which also puts its `lease.*` event in
the outbox (published by the relay); then its metric.

A lease belongs to the client that granted it: another client gets NotFound for it (the
script checks the owner, so it costs no extra round trip); an admin may act on any lease."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.api.http.idempotency import check_key, fingerprint, scoped_key
from proxyfleet.api.metrics import (
    LEASE_CONFLICTS,
    LEASE_UNAVAILABLE,
    LEASES_EXPIRED,
    LEASES_GRANTED,
    LEASES_RELEASED,
)
from proxyfleet.api.providers.service import ProviderCatalog
from proxyfleet.common.core.errors import Conflict, NotFound, Unavailable
from proxyfleet.common.domain.tokens import Principal
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import GrantRequest, LeaseStore, PoolStore, ProxyRegistry
from proxyfleet.common.store.lease_pages import LeasePage
from proxyfleet.common.store.lease_terms import GrantedProxy, GrantKey, Released, Renewed
from proxyfleet.common.wire.models import Lease, LeaseOutcome

log = get_logger(__name__)

SWEEP_BATCH = 500


@dataclass(frozen=True, slots=True)
class Grant:
    lease: Lease
    proxy: GrantedProxy


class LeaseService:
    def __init__(
        self,
        store: LeaseStore,
        registry: ProxyRegistry,
        catalog: ProviderCatalog,
        default_ttl: float,
        pools: PoolStore,
    ) -> None:
        self._store = store
        self._pools = pools
        self._registry = registry
        self._catalog = catalog
        self._default_ttl = default_ttl

    async def grant(
        self, req: GrantRequest, *, idempotency_key: str | None = None, body: object = None
    ) -> Grant:
        """Raises Unavailable (503), Conflict (409) or NotFound (404 for a named proxy or an
        unknown pool: looked up only once a grant for a pool is refused, so a granted one
        costs no extra read).
        `req.client` (the caller's name) becomes the lease's owner. With an
        `idempotency_key`, a grant seen before with the same `body` answers with its lease."""
        self._catalog.check_selector(req.provider or None, req.zone or None)
        key = None
        if idempotency_key is not None:
            scoped = scoped_key(req.client, check_key(idempotency_key))
            key = GrantKey(scoped, fingerprint(body))
        try:
            lease, proxy = await self._store.grant_with_proxy(req, key=key)
        except Unavailable:
            await self._known_pool(req.pool)
            LEASE_UNAVAILABLE.inc()
            raise
        except Conflict:
            await self._known_pool(req.pool)
            LEASE_CONFLICTS.inc()
            raise
        LEASES_GRANTED.inc()
        # debug, not info: one line per grant and release is the API's busiest output, and
        # the lease.* events on NATS already record each of them (docs/performance.md)
        log.debug(
            "api.lease_granted",
            lease_id=lease.id,
            proxy_id=proxy.id,
            epoch=lease.epoch,
            client=req.client,
        )
        return Grant(lease, proxy)

    async def _known_pool(self, pool: str) -> None:
        """NotFound when a grant asked for a pool that does not exist (no member can ever
        match: a 404 says so, where a 503 would have the client retry)."""
        if pool and await self._pools.get(pool) is None:
            raise NotFound(f"pool {pool} not found")

    def ttl(self, ttl: float | None) -> float:
        return self._default_ttl if ttl is None else ttl

    def granted_ttl(self, ttl: float | None) -> tuple[float, bool]:
        """The TTL the store grants for an asked one (it caps at its policy's max_ttl),
        and whether it was capped: what the response tells the client."""
        asked = self.ttl(ttl)
        cap = self._store.policy.max_ttl
        return min(asked, cap), asked > cap

    async def get(self, lease_id: str, caller: Principal) -> tuple[Lease, str]:
        found = await self._store.get(lease_id)
        if found is None or (caller.lease_owner and found[0].client != caller.lease_owner):
            raise NotFound(f"lease {lease_id} not found")
        return found

    async def active(
        self, caller: Principal, *, proxy_id: str, cursor: str, limit: int
    ) -> LeasePage:
        """The caller's active leases (every one for an admin), a page at a time."""
        return await self._store.active(
            owner=caller.lease_owner, proxy_id=proxy_id, cursor=cursor, limit=limit
        )

    async def renew(
        self, lease_id: str, epoch: int, ttl: float | None, caller: Principal
    ) -> Renewed:
        return await self._store.renew(
            lease_id, epoch, self.ttl(ttl), caller.lease_owner, caller.name
        )

    async def report(
        self, lease_id: str, epoch: int, outcome: LeaseOutcome, target: str, caller: Principal
    ) -> tuple[str, str]:
        proxy_id, applied_to = await self._store.report(
            lease_id, epoch, outcome, target, caller.lease_owner, caller.name
        )
        log.info(
            "api.lease_reported",
            lease_id=lease_id,
            proxy_id=proxy_id,
            outcome=outcome.value,
            client=caller.name,
        )
        return proxy_id, applied_to

    async def release(self, lease_id: str, epoch: int, caller: Principal) -> Released:
        released = await self._store.release(lease_id, epoch, caller.lease_owner, caller.name)
        LEASES_RELEASED.inc()
        log.debug(
            "api.lease_released",
            lease_id=lease_id,
            proxy_id=released.proxy_id,
            client=caller.name,
        )
        return released

    async def sweep(self) -> int:
        """End every lease past its expiry; safe on any number of replicas at once (each
        lease is ended by exactly one script run, which alone puts its event in the outbox)."""
        total = 0
        while True:
            batch = await self._store.expire_due(SWEEP_BATCH)
            for r in batch:
                LEASES_EXPIRED.inc()
                log.info("api.lease_expired", lease_id=r.lease_id, proxy_id=r.proxy_id)
            total += len(batch)
            if len(batch) < SWEEP_BATCH:
                return total
