"""`proxyfleet-gc --once`: one collection round as the service's only component."""

from __future__ import annotations

import asyncio

from proxyfleet.common.observability.logging import get_logger
from proxyfleet.gc.collector import Collector

_log = get_logger("proxyfleet.gc")


class OneRound:
    def __init__(self, collector: Collector) -> None:
        self._collector = collector
        self._ok = True

    async def run(self, stop: asyncio.Event) -> None:
        report = await self._collector.run_once()
        await self._collector.release()
        held = [p for p in report.providers if p.held_by]
        self._ok = report.result == "ok" and not held
        if held:
            # A running GC deployment leads these providers' rounds: this run did nothing
            # for them (set the option on the deployment instead).
            _log.warning(
                "gc.once_held",
                providers=[p.provider for p in held],
                holders=sorted({p.held_by for p in held}),
            )

    def exit_code(self) -> int:
        """1 if a provider was skipped (it did not answer, or answered garbage) or its
        round is held by another replica."""
        return 0 if self._ok else 1
