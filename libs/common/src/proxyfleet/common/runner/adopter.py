"""Re-adoption: a lost registry heals from the provider instead of emptying the fleet.

Every reconcile interval the adopter marks the installation (a no-op unless the store
was emptied: then this writes the new marker, whose `created_at` tells GC and this loop
which resources outlived their entries). Every adopt interval, and every pass while the
marker is younger than that (a reset just happened: every replica and provider heals at
once, whichever wrote the marker), it lists the provider's resources, which costs a call
per VM on some providers, and registers
again each one that survived a reset (`proxyfleet.common.domain.adoption`): booting when its
address is known, so health probes it and a good probe makes it ready; provisioning
otherwise, so the runner's create adopts it and finds the address. An adopted proxy is
not granted for `adopt_hold` seconds: its leases were lost with the store, but their
holders may still be using it until those leases would have expired.
"""

from __future__ import annotations

import asyncio
import contextlib

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import MessagingUnavailable, ProviderError, StoreUnavailable
from proxyfleet.common.domain.adoption import adopted_proxy, plan_adoptions
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import ADOPTIONS
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.runner.calls import timed_call
from proxyfleet.common.runner.keyed import KeyedLocks
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.store.registry import ProxyRegistry

log = get_logger("proxyfleet.runner")


class Adopter:
    def __init__(
        self,
        *,
        registry: ProxyRegistry,
        provider: Provider,
        settings: RunnerSettings,
        installation_id: str,
        clock: Clock,
        in_hand: KeyedLocks | None = None,
    ) -> None:
        """`in_hand`: the intent handler's per-proxy locks (None: nothing in hand)."""
        self._registry = registry
        self._provider = provider
        self._settings = settings
        self._installation_id = installation_id
        self._clock = clock
        self._in_hand = in_hand if in_hand is not None else KeyedLocks()

    async def run(self, stop: asyncio.Event) -> None:
        """A pass at start, then one every reconcile_interval until `stop` is set; the
        provider is listed at the first, then as `adopt_interval` says."""
        listed_at: float | None = None
        while not stop.is_set():
            try:
                now = self._clock.now()
                due = listed_at is None or now - listed_at >= self._settings.adopt_interval
                if await self.adopt_once(list_due=due) is not None:
                    listed_at = now
            except (StoreUnavailable, MessagingUnavailable, ProviderError) as exc:
                log.warning("adopter.pass_failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._settings.reconcile_interval)

    async def adopt_once(self, *, list_due: bool = True) -> int | None:
        """Mark the installation, then register every survivor of a reset; how many.
        Without `list_due` the provider is listed only while the marker is young (None:
        it was not listed)."""
        installation = self._registry.installation
        marker = await installation.mark(self._installation_id)
        if marker.created:
            log.warning("adopter.installation_marked", installation_id=self._installation_id)
        if marker.installation_id != self._installation_id:
            log.error(
                "adopter.foreign_installation",
                installation_id=self._installation_id,
                marker_installation_id=marker.installation_id,
            )
            return 0
        young = self._clock.now() - marker.created_at < self._settings.adopt_interval
        if not (list_due or young):
            return None
        name = self._settings.provider
        listed = await timed_call(name, "list", self._provider.list_managed())
        ids = list(dict.fromkeys(r.proxy_id for r in listed))
        proxies = dict(zip(ids, await self._registry.get_many(ids), strict=True))
        absent = [pid for pid, p in proxies.items() if p is None]
        tombstoned = await installation.tombstoned(absent)
        plan = plan_adoptions(self._installation_id, marker.created_at, listed, proxies, tombstoned)
        adopted = 0
        for res in plan:
            if self._in_hand.busy(res.proxy_id):
                # An intent in hand owns it: a create that lost its entry to the reset is
                # deleting it (adopted meanwhile, it failed its boot and paused the provider's
                # creates). A later pass adopts it if it is still listed then.
                log.info("adopter.proxy_in_hand", proxy_id=res.proxy_id)
                continue
            proxy = adopted_proxy(name, res, self._clock.now(), self._settings.boot_timeout)
            done = await self._registry.adopt(proxy, self._settings.adopt_hold)
            result = "adopted" if done else ("exists" if done is False else "tombstoned")
            ADOPTIONS.labels(name, result).inc()
            if done:
                adopted += 1
                log.info(
                    "adopter.proxy_adopted",
                    proxy_id=proxy.id,
                    resource_id=res.resource_id,
                    phase=proxy.phase,
                )
        if adopted:
            log.warning("adopter.registry_healed", provider=name, adopted=adopted)
        # What the pool controller waits for before it creates on this provider in a new
        # store: otherwise a pool refills before its surviving members are back.
        await installation.mark_listed(name, marker)
        return adopted
