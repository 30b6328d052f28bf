"""The pool controller: every interval, for each pool this replica holds, read its view,
plan, act, write its status. Level-triggered: every pass starts from Redis, so a crash, a
lost message or another replica's takeover only delays the work.

One active replica per pool: a lock per pool (`<ns>:lock:pool:<name>`) taken by the first
replica that asks and kept from pass to pass; its creates, drains, quarantines, scale
decisions and events are fenced by that lock in their Lua scripts (a replica that lost it
while paused writes nothing), and its deletes are sent only after the lock is renewed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict

import msgspec

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import Conflict, NotFound, StoreUnavailable, Unavailable
from proxyfleet.common.domain.lifecycle import pending_proxy
from proxyfleet.common.domain.pool_spec import POOL_LABEL, PoolRecord
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import Fence, FencedOut, Locks, PoolStore, ProxyRegistry
from proxyfleet.common.wire.events import EventData, EventType
from proxyfleet.common.wire.models import Phase, Proxy, Withheld
from proxyfleet.pools import metrics
from proxyfleet.pools.config_pools import ConfigPools
from proxyfleet.pools.plan import plan
from proxyfleet.pools.reader import PoolReader
from proxyfleet.pools.settings import PoolsSettings
from proxyfleet.pools.view import Plan

log = get_logger("proxyfleet.pools")


def lock_name(pool: str) -> str:
    return f"pool:{pool}"


class PoolController:
    def __init__(
        self,
        *,
        pools: PoolStore,
        registry: ProxyRegistry,
        locks: Locks,
        providers: ProvidersConfig,
        settings: PoolsSettings,
        clock: Clock,
        replica: str,
        config_pools: ConfigPools | None = None,
    ) -> None:
        self._pools = pools
        self._registry = registry
        self._locks = locks
        self._providers = providers
        self._settings = settings
        self._clock = clock
        self.replica = replica
        self._config = config_pools
        self.reader = PoolReader(pools, registry, providers)
        self.held: set[str] = set()
        self.passes = 0

    async def run(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    await self.pass_once()
                except StoreUnavailable as exc:
                    log.warning("pools.pass_failed", error=str(exc))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._settings.interval)
        finally:
            # Another replica takes over at its next pass, not a lock ttl later.
            with contextlib.suppress(StoreUnavailable):
                await self._locks.release([lock_name(n) for n in self.held], self.replica)
            for name in self.held:
                metrics.forget(name)

    async def pass_once(self) -> dict[str, Plan]:
        """One pass over every pool this replica holds (taking the free ones); returns
        each one's plan."""
        if self._config is not None:
            await self._config.apply()
        names = await self._pools.names()
        holders = await self._locks.acquire(
            [lock_name(n) for n in names], self.replica, self._settings.hold_ttl
        )
        held = {n for n, h in zip(names, holders, strict=True) if h == self.replica}
        for gone in self.held - held:
            metrics.forget(gone)
        self.held = held
        metrics.POOLS_HELD.set(len(held))
        plans: dict[str, Plan] = {}
        for name in sorted(held):
            started = time.perf_counter()
            try:
                done = await self.reconcile(name)
            except FencedOut:
                log.info("pools.lock_lost", pool=name)
                self.held.discard(name)
                continue
            finally:
                metrics.PASS_SECONDS.observe(time.perf_counter() - started)
            if done is not None:
                plans[name] = done
        self.passes += 1
        return plans

    async def reconcile(self, name: str) -> Plan | None:
        """One pass over one pool (its lock held): read, plan, act, write its status."""
        record = await self._pools.get(name)
        if record is None:
            return None
        fence = Fence(lock_name(name), self.replica)
        view = await self.reader.view(record, self._clock.now())
        p = plan(view)
        await self._act(record, p, fence)
        if p.remove:
            if await self._pools.remove_if_empty(name, fence):
                log.info("pools.pool_removed", pool=name)
                metrics.forget(name)
            return p
        p.status.controller = self.replica
        await self._pools.write_status(name, p.status, self._settings.status_keep)
        metrics.record(name, p.status)
        return p

    async def _act(self, record: PoolRecord, p: Plan, fence: Fence) -> None:
        name = record.name
        for q in p.quarantines:
            if await self._pools.withhold(q.proxy_id, Withheld.QUARANTINED, q.reason, fence=fence):
                log.info(
                    "pools.member_quarantined", pool=name, proxy_id=q.proxy_id, reason=q.reason
                )
                metrics.POOL_ACTIONS.labels(name, "quarantined", "blocked").inc()
        for d in p.drains:
            if await self._pools.withhold(d.proxy_id, Withheld.DRAINING, d.reason, fence=fence):
                log.info("pools.member_drained", pool=name, proxy_id=d.proxy_id, reason=d.reason)
                metrics.POOL_ACTIONS.labels(name, "drained", d.reason).inc()
        if p.deletes:
            await self._delete(name, p, fence)
        if p.scaled is not None and await self._pools.scale(
            name, p.desired, p.scaled.reason, record.gen, fence
        ):
            log.info("pools.scaled", pool=name, size=p.desired, reason=p.scaled.reason)
            metrics.POOL_SCALINGS.labels(name, p.scaled.action).inc()
        if record.spec.autoscale is not None:
            await self._pools.save_marks(name, p.low_since, p.high_since)
        if p.creates:
            await self._create(record, p, fence)
        await self._announce(name, p, fence)

    async def _delete(self, name: str, p: Plan, fence: Fence) -> None:
        kept = await self._locks.renew([fence.lock], fence.token, self._settings.hold_ttl)
        if fence.lock not in kept:
            raise FencedOut(f"pool {name}: lock lost before its deletes")
        for d in p.deletes:
            try:
                await self._registry.transition(
                    d.proxy_id, Phase.DELETING, unleased_only=not d.leased,
                    delete_reason=f"pool {name}: {d.reason}",
                )  # fmt: skip
            except (Conflict, NotFound) as exc:  # leased since, or gone: the next pass sees
                log.info("pools.delete_skipped", pool=name, proxy_id=d.proxy_id, error=str(exc))
                continue
            log.info("pools.member_deleted", pool=name, proxy_id=d.proxy_id, reason=d.reason)
            metrics.POOL_ACTIONS.labels(name, "deleted", d.reason).inc()

    async def _create(self, record: PoolRecord, p: Plan, fence: Fence) -> None:
        spec, now = record.spec, self._clock.now()
        labels = {**spec.labels, POOL_LABEL: record.name}
        by_provider: dict[str, list[Proxy]] = defaultdict(list)
        for c in p.creates:
            member = pending_proxy(
                c.provider, c.zone, now, labels=labels, placement=spec.placement, pool=record.name
            )
            by_provider[c.provider].append(member)
        for provider, proxies in by_provider.items():
            try:
                made = await self._registry.create_many(
                    proxies, max_proxies=self._providers.get(provider).max_proxies, fence=fence
                )
            except FencedOut:
                raise
            except (Conflict, Unavailable) as exc:  # max_proxies passed meanwhile, or the
                # event backlog is over its mark: the next pass plans again
                log.warning("pools.create_refused", pool=record.name, provider=provider,
                            error=str(exc))  # fmt: skip
                continue
            log.info("pools.members_created", pool=record.name, provider=provider,
                     count=len(made.ids), zones=sorted({x.zone for x in proxies}))  # fmt: skip
            metrics.POOL_ACTIONS.labels(record.name, "created", p.create_reason).inc(len(made.ids))

    async def _announce(self, name: str, p: Plan, fence: Fence) -> None:
        if p.recycling_began:
            await self._pools.announce(
                name, EventType.POOL_RECYCLING, EventData(reason=p.recycling_began), fence
            )
        for c in p.changed:
            data = EventData(condition=c.type, status=c.status, reason=c.reason,
                             message=c.message or None)  # fmt: skip
            await self._pools.announce(name, EventType.POOL_CONDITION, data, fence)
            log.info("pools.condition_changed", pool=name, **msgspec.to_builtins(c))
