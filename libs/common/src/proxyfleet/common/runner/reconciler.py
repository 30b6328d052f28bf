"""Level-triggered safety net: proxies stuck waiting for a provisioner get their intent
published again, so a lost message delays work but never loses it.

Every replica runs it; the dedupe key (proxy, action, generation) keeps their republished
intents from piling up within the stream's duplicate window.
"""

from __future__ import annotations

import asyncio
import contextlib

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import MessagingUnavailable, StoreUnavailable
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import MESSAGES
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.store.registry import ProxyRegistry
from proxyfleet.common.wire.models import CreateIntent, DeleteIntent, Phase, Proxy

log = get_logger("proxyfleet.runner")

PAGE_SIZE = 200
WAITING_FOR_CREATE = frozenset({Phase.PENDING, Phase.PROVISIONING})


class Reconciler:
    def __init__(
        self,
        *,
        registry: ProxyRegistry,
        publisher: Publisher,
        settings: RunnerSettings,
        clock: Clock,
    ) -> None:
        self._registry = registry
        self._publisher = publisher
        self._settings = settings
        self._clock = clock

    async def run(self, stop: asyncio.Event) -> None:
        """One pass every reconcile_interval until `stop` is set; a failed pass is logged
        and the next one tries again."""
        while not stop.is_set():
            try:
                await self.reconcile_once()
            except (StoreUnavailable, MessagingUnavailable) as exc:
                log.warning("reconciler.pass_failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._settings.reconcile_interval)

    async def reconcile_once(self) -> int:
        """Publish the intent of every stale proxy of this provider; returns how many.
        Reads only this provider's proxies (its index), after building the indexes if the
        registry predates them (once per store: a check of their marker after that)."""
        provider = self._settings.provider
        added = await self._registry.index_providers()
        if added is not None:
            log.info("reconciler.providers_indexed", added=added)
        cursor = ""
        republished = 0
        while True:
            page, cursor = await self._registry.provider_page(
                provider, cursor=cursor, limit=PAGE_SIZE
            )
            for proxy in page:
                if await self._republish_if_stale(proxy):
                    republished += 1
            if not cursor:
                break
        if republished:
            log.info("reconciler.stale_intents_republished", provider=provider, count=republished)
        return republished

    async def _republish_if_stale(self, proxy: Proxy) -> bool:
        if self._clock.now() - proxy.updated_at < self._settings.stale_after:
            return False
        provider = self._settings.provider
        if proxy.phase in WAITING_FOR_CREATE:
            await self._publisher.intent(
                provider,
                CreateIntent(proxy_id=proxy.id),
                dedupe_key=f"{proxy.id}:create:{proxy.gen}",
            )
        elif proxy.phase is Phase.DELETING:
            await self._publisher.intent(
                provider,
                DeleteIntent(proxy_id=proxy.id, resource_id=proxy.resource_id, reason="reconcile"),
                dedupe_key=f"{proxy.id}:delete:{proxy.gen}",
            )
        else:
            return False
        MESSAGES.labels("reconcile", proxy.phase.value).inc()
        log.info(
            "reconciler.intent_republished", proxy_id=proxy.id, phase=proxy.phase, gen=proxy.gen
        )
        return True
