"""Creating and deleting proxies: one registry script each, which also puts the event and
the intent (create, delete) in the outbox; the relay publishes them."""

from __future__ import annotations

from typing import TypeVar

from proxyfleet.api.http.idempotency import check_key, fingerprint, scoped_key
from proxyfleet.api.metrics import LEASES_REVOKED
from proxyfleet.api.providers.service import ProviderCatalog
from proxyfleet.api.proxies.intents import Messages
from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import Conflict, InvalidInput, NotFound
from proxyfleet.common.domain.lifecycle import pending_proxy
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import Idempotency, PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Withheld

log = get_logger(__name__)

T = TypeVar("T")
DELETE_REASON = "deleted by admin"
"""The reason a delete intent from the API carries."""


def _leased(proxy: Proxy) -> Conflict:
    return Conflict(
        f"proxy {proxy.id} is leased (lease {proxy.lease_id}); "
        "pass force=true to revoke the lease and delete it",
        code="proxy_leased",
    )


class ProxyService:
    def __init__(
        self,
        registry: ProxyRegistry,
        messages: Messages,
        catalog: ProviderCatalog,
        clock: Clock,
        pools: PoolStore,
        idempotency_ttl: float = 86_400.0,
    ) -> None:
        self._registry = registry
        self._pools = pools
        self._messages = messages
        self._catalog = catalog
        self._clock = clock
        self._idempotency_ttl = max(1, round(idempotency_ttl))

    async def create(
        self,
        provider_name: str,
        zone: str | None,
        count: int,
        labels: dict[str, str],
        placement: dict[str, str] | None = None,
        *,
        idempotency_key: str | None = None,
        caller: str = "",
    ) -> list[Proxy]:
        """Store `count` pending proxies in one script, each with its create intent and
        `proxy.pending` event; Conflict past the provider's `max_proxies`.

        With an `idempotency_key` (scoped by `caller`), a create seen before with the same
        body stores nothing and answers with the proxies it made (as they are now); the
        same key with another body is a Conflict."""
        idem: Idempotency | None = None
        if idempotency_key is not None:
            print_ = fingerprint(
                {
                    "provider": provider_name,
                    "zone": zone,
                    "count": count,
                    "labels": labels,
                    "placement": placement or {},
                }
            )
            key = scoped_key(caller, check_key(idempotency_key))
            idem = Idempotency(key, print_, self._idempotency_ttl)
        provider = self._catalog.get(provider_name)
        if zone is not None:
            self._catalog.zone_for(provider, zone)  # a 400 for an unknown zone, first
        self._catalog.check_placement(provider, placement or {})
        # No zone asked: the provider's zones in turn (a Redis counter, so every replica
        # and every create takes the next), not all in the first.
        turn = 0 if zone is not None else await self._registry.take_zone_turns(provider.name, count)
        zones = self._catalog.zones_for(provider, zone, count, turn)
        now = self._clock.now()
        proxies = [
            pending_proxy(provider.name, z, now, labels=labels, placement=placement) for z in zones
        ]
        created = await self._registry.create_many(
            proxies, max_proxies=provider.max_proxies, idempotency=idem
        )
        if created.replayed:
            log.info("api.proxy_create_replayed", provider=provider.name, count=len(created.ids))
            found = await self._registry.get_many(created.ids)
            return [p for p in found if p is not None]
        made = set(created.ids)
        proxies = [p for p in proxies if p.id in made]
        for p in proxies:
            log.info(
                "api.proxy_created", proxy_id=p.id, provider=p.provider, zone=p.zone, by=caller
            )
        return proxies

    async def get(self, proxy_id: str) -> Proxy:
        proxy = await self._registry.get(proxy_id)
        if proxy is None:
            raise NotFound(f"proxy {proxy_id} not found")
        return proxy

    async def page(
        self,
        *,
        provider: str | None,
        zone: str | None,
        phase: Phase | None,
        labels: dict[str, str],
        cursor: str,
        limit: int,
        include_deleted: bool = False,
        pool: str | None = None,
    ) -> tuple[list[Proxy], str]:
        """Deleted proxies (kept a while for their history) only when asked: by
        `include_deleted` or by `phase=deleted`. A pool's members are those with its
        label (the pool sets it on every member and takes it off when it lets one go)."""
        if pool is not None:
            if labels.get(POOL_LABEL, pool) != pool:
                raise InvalidInput(
                    f"query parameter pool: {pool!r} contradicts the label filter "
                    f"{POOL_LABEL}={labels[POOL_LABEL]}"
                )
            labels = {**labels, POOL_LABEL: pool}
        shown_deleted = include_deleted or phase is Phase.DELETED
        return await self._registry.page(
            provider=provider,
            zone=zone,
            phase=phase,
            labels=labels or None,
            cursor=cursor,
            limit=limit,
            exclude_phase=None if shown_deleted else Phase.DELETED,
        )

    async def delete(self, proxy_id: str, *, force: bool) -> Proxy:
        """Move the proxy to deleting and ask its provider to delete it.

        Idempotent: a proxy already deleting gets its delete intent again (same dedupe
        key, so at most one per NATS duplicate window); a deleted one is left as it is.
        A leased proxy needs force=True, which revokes the lease.
        """
        proxy = await self.get(proxy_id)
        if proxy.phase in (Phase.DELETING, Phase.DELETED):
            return await self._again(proxy)
        if proxy.lease_id and not force:
            raise _leased(proxy)
        try:
            # unleased_only closes the race with a grant landing after the check above.
            # The script also queues proxy.deleting, lease.revoked and the delete intent.
            res = await self._registry.transition(
                proxy_id, Phase.DELETING, unleased_only=not force, delete_reason=DELETE_REASON
            )
        except Conflict:
            current = await self.get(proxy_id)
            if current.phase in (Phase.DELETING, Phase.DELETED):
                return await self._again(current)
            if current.lease_id and not force:
                raise _leased(current) from None
            raise
        log.info("api.proxy_deleting", proxy_id=proxy_id, previous=res.previous.value, force=force)
        if res.ended_lease_id:
            LEASES_REVOKED.inc()
        return await self.get(proxy_id)

    async def quarantine(self, proxy_id: str, reason: str, *, caller: str) -> Proxy:
        """Set the proxy aside: never granted (a lease it has runs on), never deleted by
        its pool (which replaces it in its count). Idempotent: a quarantined proxy keeps
        its first reason."""
        if await self._pools.withhold(proxy_id, Withheld.QUARANTINED, reason, actor=caller):
            log.info("api.proxy_quarantined", proxy_id=proxy_id, reason=reason, by=caller)
        return await self.get(proxy_id)

    async def release(self, proxy_id: str, *, caller: str) -> Proxy:
        """Put a quarantined proxy back in rotation (grantable again once ready and past
        its cooldown); Conflict when it is not quarantined."""
        if not await self._pools.withhold(proxy_id, Withheld.NO, actor=caller):
            current = await self.get(proxy_id)
            raise Conflict(
                f"proxy {proxy_id} is not quarantined"
                + (f" (it is {current.withheld.value})" if current.withheld else ""),
                code="proxy_not_quarantined",
            )
        log.info("api.proxy_unquarantined", proxy_id=proxy_id, by=caller)
        return await self.get(proxy_id)

    async def _again(self, proxy: Proxy) -> Proxy:
        if proxy.phase is Phase.DELETING:
            await self._messages.delete(proxy.provider, proxy.id, proxy.gen, reason=DELETE_REASON)
        return proxy
