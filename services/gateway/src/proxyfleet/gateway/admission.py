"""Who a connection is for and the lease it rides on, whatever the protocol a client speaks
(HTTP's Proxy-Authorization or SOCKS5's username/password): the token and username
checked, the lease acquired and, when the connection ends, released."""

from __future__ import annotations

from proxyfleet.common.core.errors import Conflict, StoreUnavailable, Unavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.gateway.auth import TokenBook
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import CLIENT_LIMITED
from proxyfleet.gateway.quota import Quota
from proxyfleet.gateway.refusals import AUTHENTICATE, Refused, bad_username, unavailable
from proxyfleet.gateway.relaying import Caller
from proxyfleet.gateway.tunnels import Hold, Tunnels
from proxyfleet.gateway.username import Selector, UsernameError, parse_username

log = get_logger(__name__)


class Admission:
    def __init__(
        self,
        leaser: Leaser,
        tokens: TokenBook,
        providers: ProvidersConfig,
        tunnels: Tunnels,
        quota: Quota,
    ) -> None:
        self._leaser = leaser
        self._tokens = tokens
        self._tunnels = tunnels
        self._quota = quota
        self._zones = {p.name: set(p.zones) for p in providers.providers}

    def caller(self, username: str, password: str) -> Caller:
        """The caller these credentials name; Refused 407 (unknown token) or 400 (a
        username the grammar or the providers config refuses)."""
        owner = self._tokens.owner_of(password)
        if owner is None:
            raise Refused(407, "unknown token", "unauthorized", AUTHENTICATE)
        try:
            selector = parse_username(username)
        except UsernameError as exc:
            raise bad_username(str(exc), exc.param) from None
        self._check_selector(selector)
        return Caller(owner, selector)

    def admit(self, caller: Caller) -> None:
        """The caller's new connection, within its client's limits (`leave` when it ends);
        Refused 429 when over one."""
        try:
            self._quota.admit(caller.owner)
        except Refused as r:
            self._limited(caller.owner, r.limit)
            raise

    def _check_lease(self, caller: Caller) -> None:
        """Refused (429) when the lease it needs would take its client over the leases
        limit; a session's lease this replica holds already counts once."""
        session = caller.selector.session
        if session and self._tunnels.holds_session(caller.owner, session):
            return
        try:
            self._quota.check_lease(caller.owner)
        except Refused as r:
            self._limited(caller.owner, r.limit)
            raise

    def _limited(self, owner: str, limit: str) -> None:
        CLIENT_LIMITED.labels(owner, limit).inc()
        self._quota.refused(owner, limit)

    def leave(self, owner: str) -> None:
        """An admitted connection of `owner` ended."""
        self._quota.left(owner)

    def _check_selector(self, sel: Selector) -> None:
        if sel.provider and sel.provider not in self._zones:
            raise bad_username(f"provider: unknown provider {sel.provider!r}", "provider")
        zones = self._zones[sel.provider] if sel.provider else set().union(*self._zones.values())
        if sel.zone and sel.zone not in zones:
            raise bad_username(f"zone: unknown zone {sel.zone!r}", "zone")

    async def lease(self, caller: Caller, target: str) -> Hold:
        """A lease for the caller's connection to `target`, expected by this replica's
        tunnels from now on (`end` when the connection no longer rides on it)."""
        if self._quota.limits_leases(caller.owner):
            self._check_lease(caller)
        caller.hold = await self._acquire(caller, target)
        self._tunnels.expect(caller.hold)
        return caller.hold

    async def end(self, caller: Caller) -> None:
        """The connection no longer rides on the caller's lease: release it (a session's
        lives on)."""
        if caller.hold is not None:
            relayed = self._tunnels.bytes_of(caller.hold.lease_id)
            self._tunnels.forget(caller.hold.lease_id)
            await self._finish(caller.hold, relayed)
            caller.hold = None

    async def _finish(self, hold: Hold, relayed: tuple[int, int]) -> None:
        try:
            await self._leaser.finish(hold, relayed)
        except StoreUnavailable as exc:  # the lease expires at its TTL instead
            log.warning("gateway.release_failed", lease_id=hold.lease_id, error=str(exc))

    async def _acquire(self, caller: Caller, target: str) -> Hold:
        try:
            return await self._leaser.acquire(caller.owner, caller.selector, target)
        except (Unavailable, Conflict) as exc:
            pool = caller.selector.pool
            if pool and await self._leaser.pool_missing(pool):
                raise bad_username(f"pool: unknown pool {pool!r}", "pool") from None
            raise unavailable(str(exc), exc.retry_after, "proxy_internal_response") from None
        except StoreUnavailable:
            raise unavailable("the lease store is unreachable", 1, "proxy_internal_error") from None
