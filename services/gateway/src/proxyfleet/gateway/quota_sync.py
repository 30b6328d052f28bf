"""The replicas' client counts shared through Redis in batches (`ClientUsageStore.sync`):
every --limits-sync-interval this replica sends its open connections and leases per
client and the bytes and connections since the last sync, and gets back the other live
replicas' counts and the day's bytes. No connection waits for it (`quota`)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store.client_usage import ClientUsageStore
from proxyfleet.gateway.quota import Quota, utc_day

log = get_logger(__name__)


class QuotaSync:
    def __init__(
        self,
        store: ClientUsageStore,
        quota: Quota,
        clock: Clock,
        interval: float,
        flush: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._flush = flush
        """Called at each sync (the byte counters' batch)."""
        self._quota = quota
        self._clock = clock
        self.interval = interval
        self.replica = uuid.uuid4().hex[:12]
        # Gone after five missed syncs (and at least 2 s): its counts stop counting.
        self._stale = max(2.0, 5 * interval)

    async def run(self, stop: asyncio.Event) -> None:
        """Sync every interval until `stop`, then once more (the last bytes)."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval)
            await self.sync_once()

    async def sync_once(self) -> None:
        self._flush()
        counts = self._quota.reports()
        day = utc_day(self._clock.now())
        try:
            replicas, totals = await self._store.sync(self.replica, self._stale, day, counts)
        except StoreUnavailable as exc:
            self._quota.restore(counts)
            log.warning("gateway.limits_sync_failed", error=str(exc))
            return
        self._quota.apply(day, replicas, totals)
        # One line per client and limit per sync, however many connections were refused.
        for (client, limit), refused in self._quota.take_refusals().items():
            log.info("gateway.client_limited", client=client, limit=limit, refused=refused)
