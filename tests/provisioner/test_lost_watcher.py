"""The runner's lost-resource watcher, with a made-up provider listing and a real registry:
it fails the running proxies the provider finds lost, leaves those that moved on meanwhile,
reports a failed check and checks again when woken; a `LostWatch` declaration builds it
for the provider entry, at the interval its settings give."""

from __future__ import annotations

import asyncio
import uuid

from tests.common.factories import make_proxy

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import ProviderError, StoreUnavailable, TemporaryProviderError
from proxyfleet.common.runner.lost import Lost, Running
from proxyfleet.common.runner.lost_watcher import LostResourceWatcher, LostWatch
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase


class Listing:
    """What the made-up provider lists: the proxy ids whose resource is gone."""

    def __init__(self) -> None:
        self.gone: set[str] = set()
        self.down = False
        self.checks = 0
        self.checked: asyncio.Queue[int] = asyncio.Queue()
        """Told the number of each check as it starts."""

    def lost(self, running: list[Running]) -> list[Lost]:
        self.checks += 1
        self.checked.put_nowait(self.checks)
        if self.down:
            raise TemporaryProviderError("listing: no answer")
        return [Lost(p, "resource gone", "gone") for p in running if p.proxy_id in self.gone]


class ListingWatcher(LostResourceWatcher[Listing]):
    def __init__(
        self, listing: Listing, registry: ProxyRegistry, name: str, interval: float = 60.0
    ) -> None:
        super().__init__(listing, registry, name, interval)
        self.failed: list[Lost] = []
        self.errors: asyncio.Queue[str] = asyncio.Queue()

    async def lost(self, running: list[Running]) -> list[Lost]:
        return self.provider.lost(running)

    def check_failed(self, exc: ProviderError | StoreUnavailable) -> None:
        self.errors.put_nowait(str(exc))

    def proxy_failed(self, lost: Lost) -> None:
        self.failed.append(lost)


async def _running(registry: ProxyRegistry, name: str, proxy_id: str, rid: str = "r") -> None:
    assert await registry.create(make_proxy(proxy_id, ManualClock(), provider=name))
    await registry.transition(proxy_id, Phase.PROVISIONING)
    await registry.transition(proxy_id, Phase.BOOTING, host="127.0.0.9", port=3128, resource_id=rid)


async def test_the_running_proxies_found_lost_are_failed_with_the_reason(
    registry: ProxyRegistry,
) -> None:
    name = f"lost-{uuid.uuid4().hex[:8]}"
    listing = Listing()
    for pid in ("p1", "p2", "p3"):
        await _running(registry, name, f"{name}-{pid}")
    listing.gone = {f"{name}-p1", f"{name}-p2"}
    watcher = ListingWatcher(listing, registry, name)

    assert await watcher.check_once() == 2
    assert sorted(lost.proxy.proxy_id for lost in watcher.failed) == [f"{name}-p1", f"{name}-p2"]
    gone = await registry.get(f"{name}-p1")
    assert gone is not None
    assert gone.phase is Phase.FAILED
    kept = await registry.get(f"{name}-p3")
    assert kept is not None
    assert kept.phase is Phase.BOOTING
    # Failed proxies are no longer running: the next check finds nothing to fail.
    assert await watcher.check_once() == 0


async def test_a_proxy_that_moved_on_meanwhile_is_left_alone(registry: ProxyRegistry) -> None:
    name = f"lost-{uuid.uuid4().hex[:8]}"
    listing = Listing()
    await _running(registry, name, f"{name}-p1")
    listing.gone = {f"{name}-p1"}

    class Racing(ListingWatcher):
        async def lost(self, running: list[Running]) -> list[Lost]:
            found = await super().lost(running)
            await registry.transition(f"{name}-p1", Phase.READY)  # health, meanwhile
            return found

    watcher = Racing(listing, registry, name)
    assert await watcher.check_once() == 0
    assert watcher.failed == []


async def test_a_failed_check_is_reported_and_a_wake_checks_again(
    registry: ProxyRegistry,
) -> None:
    name = f"lost-{uuid.uuid4().hex[:8]}"
    listing = Listing()
    listing.down = True
    watcher = ListingWatcher(listing, registry, name)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        async with asyncio.timeout(5):
            assert await listing.checked.get() == 1
            assert await watcher.errors.get() == "listing: no answer"
            listing.down = False
            watcher.wake()  # the interval is a minute: only the wake brings a second check
            assert await listing.checked.get() == 2
        assert watcher.errors.empty()
    finally:
        stop.set()
        async with asyncio.timeout(5):
            await task


async def test_a_declared_watcher_watches_the_entry_at_its_settings_interval(
    registry: ProxyRegistry,
) -> None:
    name = f"lost-{uuid.uuid4().hex[:8]}"
    listing = Listing()
    await _running(registry, name, f"{name}-p1")
    await _running(registry, f"{name}-other", f"{name}-other-p1")
    listing.gone = {f"{name}-p1", f"{name}-other-p1"}
    declared: LostWatch[Listing, RunnerSettings] = LostWatch(
        "lost", ListingWatcher, lambda s: s.reconcile_interval
    )
    settings = RunnerSettings(provider=name, reconcile_interval=0.05)
    watcher = declared.build(listing, registry, settings)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        async with asyncio.timeout(5):
            # No wake: a second check within seconds is the 0.05 s interval.
            assert await listing.checked.get() == 1
            assert await listing.checked.get() == 2
    finally:
        stop.set()
        async with asyncio.timeout(5):
            await task
    failed = await registry.get(f"{name}-p1")
    assert failed is not None
    assert failed.phase is Phase.FAILED
    other = await registry.get(f"{name}-other-p1")  # another entry's proxy
    assert other is not None
    assert other.phase is Phase.BOOTING
