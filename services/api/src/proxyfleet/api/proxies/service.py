"""Creating and deleting proxies: a registry write first, then the intent and the event."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from proxyfleet.api.events import Messages
from proxyfleet.api.metrics import LEASES_REVOKED
from proxyfleet.api.providers.service import ProviderCatalog
from proxyfleet.common.clock import Clock
from proxyfleet.common.errors import Conflict, NotFound
from proxyfleet.common.ids import new_proxy_id
from proxyfleet.common.logging import get_logger
from proxyfleet.common.models import Phase, Proxy
from proxyfleet.common.store import ProxyRegistry

log = get_logger(__name__)

T = TypeVar("T")
BATCH = 50
"""Registry writes and publishes in flight at once for a bulk create."""


async def _batched(calls: Sequence[Awaitable[T]]) -> list[T]:
    out: list[T] = []
    for i in range(0, len(calls), BATCH):
        out += await asyncio.gather(*calls[i : i + BATCH])
    return out


def new_credentials() -> tuple[str, str]:
    """Per-proxy basic-auth credentials. Both start with a letter, so no tool ever reads
    them as a command-line option; both are URL-safe."""
    return f"u{secrets.token_hex(8)}", f"k{secrets.token_urlsafe(24)}"


class ProxyService:
    def __init__(
        self, registry: ProxyRegistry, messages: Messages, catalog: ProviderCatalog, clock: Clock
    ) -> None:
        self._registry = registry
        self._messages = messages
        self._catalog = catalog
        self._clock = clock

    async def create(
        self,
        provider_name: str,
        zone: str | None,
        count: int,
        labels: dict[str, str],
        placement: dict[str, str] | None = None,
    ) -> list[Proxy]:
        """Store `count` pending proxies, then ask their provider to create them."""
        provider = self._catalog.get(provider_name)
        zone = self._catalog.zone_for(provider, zone)
        self._catalog.check_placement(provider, placement or {})
        now = self._clock.now()
        proxies = []
        for _ in range(count):
            username, password = new_credentials()
            proxies.append(
                Proxy(
                    id=new_proxy_id(),
                    provider=provider.name,
                    zone=zone,
                    phase=Phase.PENDING,
                    gen=0,
                    username=username,
                    password=password,
                    created_at=now,
                    updated_at=now,
                    labels=dict(labels),
                    placement=dict(placement or {}),
                )
            )
        created = await _batched([self._registry.create(p) for p in proxies])
        proxies = [p for p, ok in zip(proxies, created, strict=True) if ok]
        for p in proxies:
            log.info("proxy_created", proxy_id=p.id, provider=p.provider, zone=p.zone)
        await self._announce_created(proxies)
        return proxies

    async def _announce_created(self, proxies: list[Proxy]) -> None:
        for i in range(0, len(proxies), BATCH):
            chunk = proxies[i : i + BATCH]
            results = await asyncio.gather(
                *(self._messages.create(p.provider, p.id) for p in chunk),
                *(
                    self._messages.event(
                        "proxy.pending", p.id, provider=p.provider, data={"from": "", "gen": p.gen}
                    )
                    for p in chunk
                ),
            )
            if not all(results):
                log.warning("publishing_stopped", left=len(proxies) - i - len(chunk))
                return

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
    ) -> tuple[list[Proxy], str]:
        return await self._registry.page(
            provider=provider,
            zone=zone,
            phase=phase,
            labels=labels or None,
            cursor=cursor,
            limit=limit,
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
            raise Conflict(
                f"proxy {proxy_id} is leased (lease {proxy.lease_id}); "
                "pass force=true to revoke the lease and delete it",
                code="proxy_leased",
            )
        try:
            # unleased_only closes the race with a grant landing after the check above.
            res = await self._registry.transition(proxy_id, Phase.DELETING, unleased_only=not force)
        except Conflict:
            current = await self.get(proxy_id)
            if current.phase in (Phase.DELETING, Phase.DELETED):
                return await self._again(current)
            if current.lease_id and not force:
                raise Conflict(
                    f"proxy {proxy_id} is leased (lease {current.lease_id}); "
                    "pass force=true to revoke the lease and delete it",
                    code="proxy_leased",
                ) from None
            raise
        log.info("proxy_deleting", proxy_id=proxy_id, previous=res.previous.value, force=force)
        await self._messages.event(
            "proxy.deleting",
            proxy_id,
            provider=proxy.provider,
            data={"from": res.previous.value, "gen": res.gen},
        )
        if res.ended_lease_id:
            LEASES_REVOKED.inc()
            await self._messages.event(
                "lease.revoked",
                proxy_id,
                lease_id=res.ended_lease_id,
                provider=proxy.provider,
                data={"reason": "proxy deleted"},
            )
        await self._messages.delete(proxy.provider, proxy_id, res.gen, reason="deleted by admin")
        return await self.get(proxy_id)

    async def _again(self, proxy: Proxy) -> Proxy:
        if proxy.phase is Phase.DELETING:
            await self._messages.delete(
                proxy.provider, proxy.id, proxy.gen, reason="deleted by admin"
            )
        return proxy
