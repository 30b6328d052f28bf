"""The lease sweeper: ends expired leases every interval. Every replica may run one: the
expire script is atomic, so each lease is ended (and its lease.expired event put in the
outbox) exactly once."""

from __future__ import annotations

import asyncio
import contextlib

from proxyfleet.api.leases.service import LeaseService
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.observability.logging import get_logger

log = get_logger(__name__)


async def run_sweeper(leases: LeaseService, interval: float, stop: asyncio.Event) -> None:
    failing = False
    while not stop.is_set():
        try:
            await leases.sweep()
        except StoreUnavailable as exc:
            if not failing:  # once per outage, not once per interval
                log.warning("api.sweep_failed", error=str(exc))
            failing = True
        else:
            if failing:
                log.info("api.sweep_resumed")
            failing = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
