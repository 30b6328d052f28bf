"""`proxyfleet-gc --once`: one collection round as the service's only component."""

from __future__ import annotations

import asyncio

from proxyfleet.gc.collector import Collector


class OneRound:
    def __init__(self, collector: Collector) -> None:
        self._collector = collector
        self._ok = True

    async def run(self, stop: asyncio.Event) -> None:
        self._ok = (await self._collector.run_once()).result == "ok"

    def exit_code(self) -> int:
        """1 if a provider was skipped (it did not answer, or answered garbage)."""
        return 0 if self._ok else 1
