"""Background work: renew the leases of open connections, close idle tunnels and those
whose lease ended (a missed event cannot keep one open), end expired leases."""

from __future__ import annotations

import asyncio
import contextlib
import time

from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import LeaseStore
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.tunnels import Tunnels

log = get_logger(__name__)


class Upkeep:
    def __init__(
        self, leaser: Leaser, store: LeaseStore, tunnels: Tunnels, settings: GatewaySettings
    ) -> None:
        self._leaser = leaser
        self._store = store
        self._tunnels = tunnels
        self._settings = settings
        # A third of the shortest TTL: two renewals may fail before a lease runs out.
        self.interval = min(settings.lease_ttl, settings.session_idle) / 3

    async def renew(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await _sleep(stop, self.interval)
            await self.renew_once()

    async def renew_once(self) -> None:
        for hold in self._tunnels.holds():
            try:
                alive = await self._leaser.renew(hold)
            except StoreUnavailable as exc:
                log.warning("gateway.renew_failed", lease_id=hold.lease_id, error=str(exc))
                continue
            if not alive:
                self._tunnels.close_lease(hold.lease_id, "lease ended")
        now = time.monotonic()
        for relay in self._tunnels:
            if now - relay.last_active > self._settings.tunnel_idle:
                relay.close("idle")

    async def sweep(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await _sleep(stop, self._settings.sweep_interval)
            try:
                while len(await self._store.expire_due(500)) == 500:
                    pass
            except StoreUnavailable as exc:
                log.warning("gateway.sweep_failed", error=str(exc))


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
