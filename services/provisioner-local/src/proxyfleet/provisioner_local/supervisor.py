"""Restarts local proxy processes that died (a crash, an OOM kill, an operator's kill),
within a RestartPolicy: bounded, with backoff; past the bound the proxy is left to health,
which marks it unhealthy and so revokes its lease."""

from __future__ import annotations

import asyncio
import contextlib

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import ProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.provisioner_local import metrics
from proxyfleet.provisioner_local.adapter import LocalProvider
from proxyfleet.provisioner_local.restarts import RestartBook, RestartPolicy, Verdict

log = get_logger("proxyfleet.provisioner_local.supervisor")


class Supervisor:
    def __init__(
        self, provider: LocalProvider, policy: RestartPolicy, *, interval: float, clock: Clock
    ) -> None:
        self._provider = provider
        self._book = RestartBook(policy)
        self._interval = interval
        self._clock = clock
        self._exhausted: set[str] = set()  # said once per exhaustion, not every check

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.check()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await stop.wait()

    async def check(self) -> None:
        """One pass: restart every dead proxy whose turn it is."""
        try:
            dead = await self._provider.dead()
        except ProviderError as exc:
            log.warning("local.supervise_failed", error=str(exc))
            return
        now = self._clock.now()
        self._book.prune(now)
        self._exhausted &= set(dead)
        due: list[str] = []
        for proxy_id in dead:
            verdict = self._book.verdict(proxy_id, now)
            if verdict is Verdict.RESTART:
                due.append(proxy_id)
            elif verdict is Verdict.GIVE_UP and proxy_id not in self._exhausted:
                self._exhausted.add(proxy_id)
                metrics.RESTARTS.labels(result="exhausted").inc()
                log.warning(
                    "local.restarts_exhausted",
                    proxy_id=proxy_id,
                    restarts=self._book.policy.max_restarts,
                    window=self._book.policy.window,
                )
        await asyncio.gather(*(self._restart(proxy_id, now) for proxy_id in due))

    async def _restart(self, proxy_id: str, now: float) -> None:
        attempt = self._book.record(proxy_id, now)
        try:
            pid = await self._provider.revive(proxy_id)
        except ProviderError as exc:
            metrics.RESTARTS.labels(result="failed").inc()
            log.warning(
                "local.proxy_restart_failed", proxy_id=proxy_id, attempt=attempt, error=str(exc)
            )
            return
        if pid:
            metrics.RESTARTS.labels(result="restarted").inc()
            log.info("local.proxy_restarted", proxy_id=proxy_id, pid=pid, attempt=attempt)
