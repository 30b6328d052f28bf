"""Requests that write to the outbox, made until told to stop: creates (an event and an
intent each), grants and releases (an event each), as the API's clients make them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tests.api.helpers import PROVIDER, Api


class Load:
    def __init__(self, api: Api) -> None:
        self._api = api
        self.statuses: list[int] = []
        self.writes = 0
        """Requests answered 2xx (each wrote at least one outbox entry)."""

    async def one_round(self) -> None:
        """A create, a grant and the grant's release."""
        r = await self._api.admin.post("/v1/proxies", json={"provider": PROVIDER})
        self._count(r.status_code)
        r = await self._api.client.post("/v1/leases", json={"ttl": 30})
        self._count(r.status_code)
        if r.status_code == 201:
            lease = r.json()
            r = await self._api.client.post(
                f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
            )
            self._count(r.status_code)

    def _count(self, status: int) -> None:
        self.statuses.append(status)
        if 200 <= status < 300:
            self.writes += 1

    @contextlib.asynccontextmanager
    async def running(self, workers: int = 2) -> AsyncIterator[None]:
        """Rounds on `workers` tasks for the length of the block."""
        stop = asyncio.Event()

        async def work() -> None:
            while not stop.is_set():
                await self.one_round()

        tasks = [asyncio.create_task(work()) for _ in range(workers)]
        try:
            yield
        finally:
            stop.set()
            await asyncio.gather(*tasks)

    def failures(self) -> list[int]:
        return [s for s in self.statuses if not 200 <= s < 300]
