"""Leases for connections, straight through the shared lease store (the API's own Lua
scripts: each change and its `lease.*` event reach Redis in one step).

Without a session, a connection gets a lease of its own, released when it closes. With a
session, the session's lease (bound in Redis by SessionStore) is renewed and reused by
every connection of that session, on any replica, until the session ends or idles."""

from __future__ import annotations

import contextlib
import time

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import Conflict, NotFound, StoreUnavailable, Unavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import GrantRequest, LeaseStore, PoolStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import GrantedProxy
from proxyfleet.common.store.sessions import SessionLease, SessionStore
from proxyfleet.common.wire.models import LeaseOutcome
from proxyfleet.gateway.metrics import GRANTS_BY_RESULT, REPORTS
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.tunnels import Hold
from proxyfleet.gateway.username import Selector

log = get_logger(__name__)

SESSION_RACE_RETRY = 0.2
"""Retry-After when a session's binding changed under two racing grants twice."""


class Leaser:
    def __init__(
        self,
        store: LeaseStore,
        registry: ProxyRegistry,
        sessions: SessionStore,
        settings: GatewaySettings,
        clock: Clock,
        pools: PoolStore,
    ) -> None:
        self._store = store
        self._pools = pools
        self._registry = registry
        self._sessions = sessions
        self._settings = settings
        self._clock = clock

    async def acquire(self, owner: str, sel: Selector, target: str) -> Hold:
        """The lease a new connection rides on. Raises Unavailable (nothing to grant),
        Conflict, or StoreUnavailable."""
        started = time.perf_counter()
        result = "ok"
        try:
            if not sel.session:
                return await self._grant(owner, sel, target, self._settings.lease_ttl)
            return await self._session(owner, sel, target)
        except Unavailable:
            result = "unavailable"
            raise
        except Exception:
            result = "error"
            raise
        finally:
            GRANTS_BY_RESULT[result].observe(time.perf_counter() - started)

    async def replace(self, old: Hold, sel: Selector, why: str) -> Hold:
        """After the upstream of `old` failed: report it `failed`, get another proxy (the
        old lease is held meanwhile, so it cannot be the same one), end the old lease."""
        await self.report(old, LeaseOutcome.FAILED, why)
        try:
            if not old.session:
                return await self._grant(old.owner, sel, old.target, self._settings.lease_ttl)
            ttl = self._session_ttl(old.ends_at)
            fresh = await self._grant(old.owner, sel, old.target, ttl, old.session, old.ends_at)
            won = await self._sessions.claim(
                old.owner, old.session, _binding(fresh), replaces=old.lease_id
            )
            if won.lease_id != fresh.lease_id:
                await self.end(fresh)
                raise Unavailable("the session moved to another lease meanwhile", 0.0)
            return fresh
        finally:
            await self.end(old)

    async def pool_missing(self, pool: str) -> bool:
        """Whether the store says no such pool is declared (read once a grant for it was
        refused; an outage says nothing: False)."""
        try:
            return await self._pools.get(pool) is None
        except StoreUnavailable:
            return False

    async def finish(self, hold: Hold, relayed: tuple[int, int] | None = None) -> None:
        """A connection closed: its own lease ends, with the bytes `relayed` on it; a
        session's lease lives on (it expires once the session idles or ends)."""
        if not hold.session:
            await self.end(hold, relayed)

    async def end(self, hold: Hold, relayed: tuple[int, int] | None = None) -> None:
        """Release the lease (with the bytes relayed on it, when known); one that already
        ended is no error."""
        with contextlib.suppress(Conflict, NotFound):
            await self._store.release(
                hold.lease_id, hold.epoch, hold.owner, hold.owner, relayed=relayed
            )
        if hold.session:
            await self._sessions.drop(hold.owner, hold.session, hold.lease_id)

    async def renew(self, hold: Hold) -> bool:
        """Extend a lease in use; False when it has ended (or its session is over)."""
        ttl = self._session_ttl(hold.ends_at) if hold.session else self._settings.lease_ttl
        if ttl <= 0:
            await self.end(hold)
            return False
        try:
            await self._store.renew(hold.lease_id, hold.epoch, ttl, hold.owner, hold.owner)
        except (Conflict, NotFound):
            return False
        return True

    async def report(self, hold: Hold, outcome: LeaseOutcome, why: str, target: str = "") -> None:
        try:
            await self._store.report(
                hold.lease_id, hold.epoch, outcome, target, hold.owner, hold.owner
            )
        except (Conflict, NotFound):
            return
        REPORTS.labels(outcome.value).inc()
        log.info(
            "gateway.reported",
            lease_id=hold.lease_id,
            proxy_id=hold.proxy.id,
            outcome=outcome.value,
            target=target or hold.target,
            why=why,
        )

    # ---- internals ------------------------------------------------------------------

    async def _grant(
        self,
        owner: str,
        sel: Selector,
        target: str,
        ttl: float,
        session: str = "",
        ends_at: float = 0.0,
    ) -> Hold:
        req = GrantRequest(
            ttl=ttl,
            holder=sel.name,
            target=target,
            provider=sel.provider,
            zone=sel.zone,
            labels=sel.labels,
            client=owner,
            pool=sel.pool,
        )
        lease, proxy = await self._store.grant_with_proxy(req)
        return Hold(lease.id, lease.epoch, proxy, owner, target, session, ends_at)

    async def _session(self, owner: str, sel: Selector, target: str) -> Hold:
        now = self._clock.now()
        bound = await self._sessions.get(owner, sel.session)
        if bound is not None and (hold := await self._reuse(owner, sel, target, bound)):
            return hold
        minutes = sel.sesstime or self._settings.session_minutes
        ends_at = bound.ends_at if bound is not None and bound.ends_at > now else now + minutes * 60
        fresh = await self._grant(
            owner, sel, target, self._session_ttl(ends_at), sel.session, ends_at
        )
        replaces = bound.lease_id if bound is not None else ""
        won = await self._sessions.claim(owner, sel.session, _binding(fresh), replaces=replaces)
        if won.lease_id == fresh.lease_id:
            return fresh
        # Another replica bound the session first: give ours back and ride on theirs.
        await self._store_release(fresh)
        if hold := await self._reuse(owner, sel, target, won):
            return hold
        raise Unavailable("the session's lease changed twice meanwhile", SESSION_RACE_RETRY)

    async def _reuse(
        self, owner: str, sel: Selector, target: str, bound: SessionLease
    ) -> Hold | None:
        ttl = self._session_ttl(bound.ends_at)
        if ttl <= 0:
            return None
        try:
            renewed = await self._store.renew(bound.lease_id, bound.epoch, ttl, owner, owner)
        except (Conflict, NotFound):
            return None
        proxy = await self._registry.get(renewed.proxy_id)
        if proxy is None or not proxy.host:
            return None
        granted = GrantedProxy(
            proxy.id, proxy.provider, proxy.zone, proxy.host, proxy.port,
            proxy.username, proxy.password, proxy.scheme,
        )  # fmt: skip
        return Hold(bound.lease_id, bound.epoch, granted, owner, target, sel.session, bound.ends_at)

    async def _store_release(self, hold: Hold) -> None:
        with contextlib.suppress(Conflict, NotFound):
            await self._store.release(hold.lease_id, hold.epoch, hold.owner, hold.owner)

    def _session_ttl(self, ends_at: float) -> float:
        return min(self._settings.session_idle, ends_at - self._clock.now())


def _binding(hold: Hold) -> SessionLease:
    return SessionLease(hold.lease_id, hold.epoch, hold.ends_at)
