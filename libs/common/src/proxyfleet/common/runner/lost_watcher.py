"""Fails the proxies whose resource vanished or failed for good (a preempted VM, a pod
deleted or crash-looping), with the reason: the transition to FAILED queues the delete
intent that removes what is left. One check every `interval` seconds, or sooner when
the provider wakes the watcher.

The provider says which running proxies are lost (`lost`, given the proxies the registry
holds as running, read before the provider looks, so a resource made since is not needed
and one deleted since belongs to a proxy whose generation moved on) and writes its own
log lines and metrics (`check_failed`, `proxy_failed`). A provisioner declares its
watcher with a `LostWatch` (`provisioner_service` runs it beside the runner).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from proxyfleet.common.core.errors import Conflict, NotFound, ProviderError, StoreUnavailable
from proxyfleet.common.domain.lifecycle import PROBED
from proxyfleet.common.runner.lost import Lost, Running
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase

PAGE = 500
P = TypeVar("P")
S = TypeVar("S", bound=RunnerSettings)


class LostResourceWatcher(abc.ABC, Generic[P]):
    """Watches the proxies of the provider entry `name`, whose adapter is `provider`."""

    def __init__(self, provider: P, registry: ProxyRegistry, name: str, interval: float) -> None:
        self.provider = provider
        self._registry = registry
        self._name = name
        self._interval = interval
        self._wake = asyncio.Event()

    @abc.abstractmethod
    async def lost(self, running: list[Running]) -> list[Lost]:
        """The proxies of `running` whose resource is gone or failed for good."""

    @abc.abstractmethod
    def check_failed(self, exc: ProviderError | StoreUnavailable) -> None:
        """A check failed (it is tried again after the interval)."""

    @abc.abstractmethod
    def proxy_failed(self, lost: Lost) -> None:
        """`lost.proxy` was failed."""

    def wake(self) -> None:
        """Check again now, not after the rest of the interval."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._wake.clear()
            try:
                await self.check_once()
            except (ProviderError, StoreUnavailable) as exc:
                self.check_failed(exc)
            waits = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait(waits, timeout=self._interval,
                                   return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            for waiter in waits:
                waiter.cancel()

    async def check_once(self) -> int:
        """Fail every running proxy whose resource is lost; how many."""
        failed = 0
        for found in await self.lost(await self._running()):
            proxy = found.proxy
            try:
                await self._registry.transition(
                    proxy.proxy_id, Phase.FAILED, expected_gen=proxy.gen, reason=found.reason
                )
            except (Conflict, NotFound):
                continue  # moved on meanwhile (deleted, failed by health, ...)
            self.proxy_failed(found)
            failed += 1
        return failed

    async def _running(self) -> list[Running]:
        out: list[Running] = []
        for phase in sorted(PROBED):
            cursor = ""
            while True:
                page, cursor = await self._registry.page(
                    provider=self._name, phase=phase, cursor=cursor, limit=PAGE
                )
                out += [Running(p.id, p.gen, p.resource_id) for p in page if p.resource_id]
                if not cursor:
                    break
        return out


@dataclass(frozen=True, slots=True)
class LostWatch(Generic[P, S]):
    """A provisioner's lost-resource watcher: the service host's component `component`
    runs `watcher(provider, registry, provider entry name, interval(settings)).run`."""

    component: str
    watcher: Callable[[P, ProxyRegistry, str, float], LostResourceWatcher[P]]
    interval: Callable[[S], float]
    """Seconds between two checks, from the provisioner's settings."""

    def build(self, provider: P, registry: ProxyRegistry, settings: S) -> LostResourceWatcher[P]:
        return self.watcher(provider, registry, settings.provider, self.interval(settings))
