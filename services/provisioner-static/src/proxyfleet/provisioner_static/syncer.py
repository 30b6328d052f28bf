"""The syncer: keeps a static provider's registry entries what its sources list.

Every `sync_interval` (and at once on SIGHUP, which also re-reads every file and URL) it
reads the sources that are due, the runtime-added entries when their version moved, and
this provider's proxies; plans (pure.plan) and acts through the store's normal paths: new
proxies by the create script (proxy.pending, max_proxies and the create intent as for every
provider), drains by the pools' withhold script, forgetting by the move to deleting under
an unleased-only check. A bad line is a `source.entry_rejected` event and a metric; a
failed or held load a `source.load_failed` event, its last good load kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

import httpx

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import (
    Conflict,
    MessagingUnavailable,
    StoreError,
    StoreUnavailable,
    Unavailable,
)
from proxyfleet.common.core.ids import new_id
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import PoolStore, ProviderEntries, ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Withheld
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig, source_key
from proxyfleet.provisioner_static.pure.desired import (
    API,
    AddedLine,
    api_load,
    file_load,
    inline_load,
    vendor_load,
)
from proxyfleet.provisioner_static.pure.lines import Rejected, parse_lines
from proxyfleet.provisioner_static.pure.plan import Desired, Plan, SourceLoad, plan_sync
from proxyfleet.provisioner_static.reports import Reports
from proxyfleet.provisioner_static.settings import StaticProvisionerSettings
from proxyfleet.provisioner_static.sources import AddedEntries, SourceReader, SourceUnavailable

log = get_logger("proxyfleet.provisioner.static")
PAGE = 500
RETRY_DELETED = 5.0
"""Seconds before an entry whose id a proxy still being forgotten holds is tried again
(once deleted, the create takes its record over)."""


class Syncer:
    def __init__(
        self,
        entry: StaticProviderConfig,
        *,
        registry: ProxyRegistry,
        pools: PoolStore,
        entries: ProviderEntries,
        settings: StaticProvisionerSettings,
        clock: Clock,
    ) -> None:
        self._entry = entry
        self._name = entry.name
        self._registry = registry
        self._pools = pools
        self._settings = settings
        self._clock = clock
        self._added = AddedEntries(entries, entry.name)
        self._fixed = [inline_load(entry), vendor_load(entry)]
        self._files: dict[str, SourceLoad] = {}
        """Each file or URL source's last good load."""
        self._texts: dict[str, str] = {}
        """Each one's last text read: its bad lines are reported when it changes."""
        self._due: dict[int, float] = {}
        self._api = SourceLoad(API, None)
        self._hup = asyncio.Event()
        self._reports = Reports(entry.name, registry.outbox, clock)
        self._retry_at: dict[str, float] = {}
        # One replica syncs at a time (the others would only repeat its writes and events).
        self._lock, self._token = f"static-sync:{entry.name}", new_id("y", 8)
        reads = settings.source_timeout * (len(entry.static.sources) + 1)
        self._lock_ttl = 10 * settings.sync_interval + reads

    def hup(self) -> None:
        """Re-read every source at the next sync, now (SIGHUP)."""
        self._hup.set()

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        _on_hup(loop, self.hup)
        limits = httpx.Timeout(self._settings.source_timeout)
        try:
            async with httpx.AsyncClient(timeout=limits, follow_redirects=True) as http:
                reader = SourceReader(http, self._settings.source_max_bytes)
                while not stop.is_set():
                    try:
                        await self.sync_once(reader)
                    except (StoreUnavailable, MessagingUnavailable) as exc:
                        log.warning("static.sync_failed", provider=self._name, error=str(exc))
                    await _first(stop, self._hup, self._settings.sync_interval)
        finally:
            _on_hup(loop, self.hup, remove=True)
            with contextlib.suppress(StoreUnavailable):
                await self._registry.locks.release([self._lock], self._token)

    async def sync_once(self, reader: SourceReader) -> Plan | None:
        """Read what is due, plan, act; the plan acted on (None: another replica syncs)."""
        everything = self._hup.is_set()
        self._hup.clear()
        [holder] = await self._registry.locks.acquire([self._lock], self._token, self._lock_ttl)
        if holder != self._token:
            return None
        loaded = await self._read_sources(reader, everything)
        if await self._added.changed():
            await self._read_added()
        proxies = await self._proxies()
        loads = [*self._fixed, *self._file_loads(), self._api]
        plan = plan_sync(
            loads,
            proxies,
            max_proxies=self._entry.max_proxies,
            empty_guard=self._entry.static.empty_guard,
        )
        await self._report_plan(plan, loaded)
        await self._act(plan)
        return plan

    # ---- reading ---------------------------------------------------------------------

    def _file_loads(self) -> list[SourceLoad]:
        keys = [source_key(i, s) for i, s in enumerate(self._entry.static.sources)]
        return [self._files.get(key, SourceLoad(key, None, guarded=True)) for key in keys]

    async def _read_sources(self, reader: SourceReader, everything: bool) -> set[str]:
        """Read the due sources (all of them: `everything`); the keys loaded."""
        now, loaded = self._clock.now(), set()
        for i, source in enumerate(self._entry.static.sources):
            if not everything and now < self._due.get(i, 0.0):
                continue
            self._due[i] = now + source.refresh
            key = source_key(i, source)
            try:
                text = await reader.read(source)
            except SourceUnavailable as exc:
                await self._reports.load_failed(key, str(exc))
                continue
            parsed = parse_lines(text.splitlines(), source.scheme)
            if everything or self._texts.get(key) != text:  # each bad line once per change
                await self._reports.rejected(key, parsed.rejected)
            self._texts[key] = text
            self._files[key] = file_load(self._entry, i, source, parsed)
            loaded.add(key)
        return loaded

    async def _read_added(self) -> None:
        stored = self._added.entries or {}
        added = [AddedLine(i, e.line, e.zone, e.labels, e.name) for i, e in stored.items()]
        self._api, bad = api_load(self._entry, added)
        named = [Rejected(0, f"entry {entry_id}: {r.reason}", r.kind) for entry_id, r in bad]
        await self._reports.rejected(API, named)
        self._reports.loaded(API, len(self._api.entries or []))

    async def _proxies(self) -> list[Proxy]:
        out, cursor = [], ""
        while True:
            page, cursor = await self._registry.provider_page(self._name, cursor=cursor, limit=PAGE)
            out += page
            if not cursor:
                return out

    # ---- acting ----------------------------------------------------------------------

    async def _report_plan(self, plan: Plan, loaded: set[str]) -> None:
        held = {h.source: h for h in plan.held}
        for key in loaded:  # once per load, not once per sync
            if key in held:
                await self._reports.held(held[key], self._entry.static.empty_guard)
            else:
                self._reports.loaded(key, len(self._files[key].entries or []))
        self._reports.over_max(len(plan.over_max), self._entry.max_proxies)

    async def _act(self, plan: Plan) -> None:
        if plan.add:
            await self._add(plan.add)
        for proxy_id in plan.drain:
            await self._drain(proxy_id)
        for proxy_id in plan.delete:
            await self._forget(proxy_id)
        for proxy_id, fields in plan.update:
            try:
                await self._registry.update(proxy_id, expected_gen=None, **fields)
            except StoreError as exc:  # moved on meanwhile: the next sync sees it
                log.info("static.update_skipped", proxy_id=proxy_id, error=str(exc))
                continue
            log.info("static.proxy_updated", proxy_id=proxy_id, fields=sorted(fields))

    async def _add(self, desired: list[Desired]) -> None:
        now = self._clock.now()
        desired = [d for d in desired if now >= self._retry_at.get(d.id, 0.0)]
        if not desired:
            return
        proxies = [_pending(self._name, d, now) for d in desired]
        try:
            made = await self._registry.create_many(proxies, max_proxies=self._entry.max_proxies)
        except (Conflict, Unavailable) as exc:  # max_proxies reached, or the event backlog
            # is over its mark: the next sync plans again
            log.warning("static.create_refused", provider=self._name, error=str(exc))
            return
        if made.ids:
            log.info("static.proxies_added", provider=self._name, count=len(made.ids),
                     sources=sorted({d.source for d in desired}))  # fmt: skip
        # An id the create skipped is a proxy still being forgotten (deleting): try again
        # a little later rather than every sync.
        created = set(made.ids)
        for d in desired:
            if d.id in created:
                self._retry_at.pop(d.id, None)
                continue
            if d.id not in self._retry_at:
                log.info("static.entry_waits_for_deleted_record", provider=self._name,
                         proxy_id=d.id, source=d.source)  # fmt: skip
            self._retry_at[d.id] = now + RETRY_DELETED

    async def _drain(self, proxy_id: str) -> None:
        try:
            drained = await self._pools.withhold(
                proxy_id, Withheld.DRAINING, "its source no longer lists it"
            )
        except StoreError as exc:
            log.info("static.drain_skipped", proxy_id=proxy_id, error=str(exc))
            return
        if drained:
            log.info("static.proxy_drained", provider=self._name, proxy_id=proxy_id)

    async def _forget(self, proxy_id: str) -> None:
        try:
            await self._registry.transition(
                proxy_id, Phase.DELETING, unleased_only=True,
                delete_reason="its source no longer lists it",
            )  # fmt: skip
        except StoreError as exc:  # leased since, or gone: the next sync sees
            log.info("static.forget_skipped", proxy_id=proxy_id, error=str(exc))
            return
        log.info("static.proxy_forgotten", provider=self._name, proxy_id=proxy_id)


def _pending(provider: str, d: Desired, now: float) -> Proxy:
    """A new proxy for an upstream: pending (its create intent finds where it listens in
    its placement), external (never deleted outside, kept failed while listed)."""
    return Proxy(
        id=d.id, provider=provider, zone=d.zone, phase=Phase.PENDING, gen=0,
        username=d.line.username, password=d.line.password, created_at=now, updated_at=now,
        labels=dict(d.labels), placement=d.placement(), scheme=d.line.scheme, external=True,
    )  # fmt: skip


_HUP_LISTENERS: set[Callable[[], None]] = set()


def _on_hup(loop: asyncio.AbstractEventLoop, hup: Callable[[], None], remove: bool = False) -> None:
    """Call `hup` on SIGHUP (every syncer of the process: a loop has one handler per
    signal), or no more."""
    if remove:
        _HUP_LISTENERS.discard(hup)
        if not _HUP_LISTENERS:
            loop.remove_signal_handler(signal.SIGHUP)
        return
    _HUP_LISTENERS.add(hup)
    loop.add_signal_handler(signal.SIGHUP, _hup_all)


def _hup_all() -> None:
    for hup in list(_HUP_LISTENERS):
        hup()


async def _first(stop: asyncio.Event, hup: asyncio.Event, seconds: float) -> None:
    """Until `stop` or `hup` is set, or `seconds` passed."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(hup.wait())]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*waits, return_exceptions=True)
