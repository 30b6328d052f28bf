"""The lease store: grant, renew, report, release, expire. Each call is one Lua script,
so two holders never hold one proxy, whatever the number of API replicas; the same script
appends its `lease.*` event (carrying the proxy's provider) to the outbox."""

from __future__ import annotations

from typing import cast

import msgspec
import redis.asyncio as aioredis

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.store.codec import lease_from_hash
from proxyfleet.common.store.egress_holds import Exclusivity, nothing_available
from proxyfleet.common.store.fastid import fast_id, fast_lease_id
from proxyfleet.common.store.lease_pages import LeasePage, active_page, lease_of_proxy
from proxyfleet.common.store.lease_terms import (
    GrantedProxy,
    GrantKey,
    GrantRequest,
    LeasePolicy,
    Released,
    Renewed,
)
from proxyfleet.common.store.mux import ScriptMux
from proxyfleet.common.store.outage import translates_outages
from proxyfleet.common.store.replies import LeaseReply, backlogged
from proxyfleet.common.store.scripts import Scripts
from proxyfleet.common.wire.models import Lease, LeaseOutcome, Scheme

_json = msgspec.json.Encoder()


@translates_outages
class LeaseStore:
    def __init__(
        self,
        client: aioredis.Redis,
        clock: Clock,
        policy: LeasePolicy,
        *,
        namespace: str = "pf",
        mux: ScriptMux | None = None,
        exclusivity: Exclusivity | None = None,
    ) -> None:
        """`mux`: run the scripts through a ScriptMux (pipelined; the API's hot path).
        `exclusivity`: the providers' modes (Exclusivity.of the providers config; default:
        every provider in the default mode)."""
        self._redis = client
        self._clock = clock
        self.policy = policy
        self._ns = namespace
        self._scripts = Scripts(client, namespace, mux)
        self._exclusivity = (exclusivity or Exclusivity()).script_arg()

    async def grant(self, req: GrantRequest, lease_id: str | None = None) -> Lease:
        """Raises Unavailable (503), Conflict (409) or NotFound (404 for a named proxy)."""
        return (await self.grant_with_proxy(req, lease_id))[0]

    async def grant_with_proxy(
        self, req: GrantRequest, lease_id: str | None = None, key: GrantKey | None = None
    ) -> tuple[Lease, GrantedProxy]:
        """grant(), with the granted proxy as the same script read it (one round trip).
        With `key`: a grant retried with it (and the same request) answers with the lease
        the first made while that lease is active; Conflict once it has ended or for
        another request under the same key."""
        lease_id = lease_id or fast_lease_id()
        now = self._clock.now()
        ttl = min(req.ttl, self.policy.max_ttl)
        res = await self._scripts.call(
            "grant",
            repr(now),
            lease_id,
            req.holder,
            req.target,
            repr(ttl),
            req.proxy_id,
            req.provider,
            req.zone,
            _json.encode(req.labels).decode() if req.labels else "",
            self.policy.scan_limit,
            repr(self.policy.retry_after),
            fast_id("e"),
            req.client,
            repr(self.policy.max_probe_age),
            key.key if key else "",
            key.fingerprint if key else "",
            req.pool,
            self._exclusivity,
            req.distinct or "",
            self.policy.outbox_high_water,
        )
        reply = LeaseReply(int(res[0]))
        if reply in (LeaseReply.OK, LeaseReply.REPLAYED):
            lease = Lease(
                id=str(res[5]),
                proxy_id=res[1],
                epoch=int(res[2]),
                holder=req.holder,
                target=req.target,
                client=req.client,
                granted_at=now if reply is LeaseReply.OK else float(res[6]),
                expires_at=float(res[3]),
                egress_ip=str(res[7] or ""),
            )
            provider, zone, host, port, username, password, *scheme = res[4]
            proxy = GrantedProxy(
                res[1], provider or "", zone or "", host or "", int(port or 0),
                username or "", password or "", (scheme and scheme[0]) or Scheme.HTTP,
            )  # fmt: skip
            return lease, proxy
        if reply is LeaseReply.BACKLOG:
            raise backlogged(int(res[1]), self.policy.outbox_high_water)
        if reply is LeaseReply.NONE_AVAILABLE:
            retry_after = min(float(res[1]), self.policy.max_ttl)
            skipped = int(res[2]), int(res[3]), int(res[4])
            raise nothing_available(retry_after, *skipped, self.policy.max_probe_age)
        if reply is LeaseReply.MISSING:
            raise NotFound(f"proxy {req.proxy_id} not found")
        if reply is LeaseReply.KEY_REUSED:
            raise Conflict(
                "this Idempotency-Key was used with a different grant request; use a new key "
                "for a different grant",
                code="idempotency_key_reused",
            )
        if reply is LeaseReply.LEASE_ENDED:
            raise Conflict(
                f"the lease this Idempotency-Key granted has ended ({res[1]}); use a new key "
                "for a new lease",
                code="idempotent_lease_ended",
            )
        # NOT_GRANTABLE: the proxy asked for, not now (res: why, retry after, code)
        raise Conflict(str(res[1]), retry_after=float(res[2]), code=_code(res, 3))

    async def get(self, lease_id: str) -> tuple[Lease, str] | None:
        """The lease and its state (active, released, expired, revoked)."""
        data = cast(dict[str, str], await self._redis.hgetall(f"{self._ns}:lease:{lease_id}"))
        if not data:
            return None
        return lease_from_hash(data), data.get("state", "active")

    async def active(
        self, *, owner: str = "", proxy_id: str = "", limit: int = 100, cursor: str = ""
    ) -> LeasePage:
        """A page of active leases, soonest expiry first (`owner`: only that client's;
        `proxy_id`: that proxy's lease, if any). InvalidInput for a malformed cursor."""
        if proxy_id:
            return await lease_of_proxy(self._redis, self._ns, proxy_id, owner)
        return await active_page(self._redis, self._ns, owner=owner, limit=limit, cursor=cursor)

    # `owner` on renew/report/release: the caller's token name, checked against the
    # lease's owner in the script (another's lease is NotFound); "" acts on any (admin).
    async def renew(
        self, lease_id: str, epoch: int, ttl: float, owner: str = "", actor: str = ""
    ) -> Renewed:
        """`owner`: the client the call is restricted to ("" for an admin); `actor`: the
        calling token's name, for the event's `by`."""
        ttl = min(ttl, self.policy.max_ttl)
        res = await self._scripts.call(
            "renew", lease_id, epoch, repr(self._clock.now()), repr(ttl), fast_id("e"), owner,
            actor,
        )  # fmt: skip
        self._check(res, lease_id)
        return Renewed(lease_id, str(res[2]), float(res[1]))

    async def release(
        self,
        lease_id: str,
        epoch: int,
        owner: str = "",
        actor: str = "",
        relayed: tuple[int, int] | None = None,
    ) -> Released:
        """End the lease; `relayed`: the bytes up and down the gateway carried on it,
        recorded on the lease and in its `lease.released` event."""
        now = repr(self._clock.now())
        cooldown = repr(self.policy.cooldown)
        counted = [str(relayed[0]), str(relayed[1])] if relayed is not None else []
        res = await self._scripts.call(
            "release", lease_id, epoch, now, cooldown, fast_id("e"), owner,
            repr(self.policy.ended_ttl), actor, *counted,
        )  # fmt: skip
        self._check(res, lease_id)
        return Released(lease_id, str(res[1]))

    async def report(
        self,
        lease_id: str,
        epoch: int,
        outcome: LeaseOutcome,
        target: str = "",
        owner: str = "",
        actor: str = "",
    ) -> tuple[str, str]:
        """Record an outcome; returns (proxy id, target it applied to)."""
        res = await self._scripts.call(
            "report",
            lease_id,
            epoch,
            repr(self._clock.now()),
            outcome.value,
            target,
            repr(self.policy.ban_seconds),
            fast_id("e"),
            owner,
            actor,
        )
        self._check(res, lease_id)
        return str(res[1]), str(res[2])

    async def expire_due(self, limit: int = 500) -> list[Released]:
        """Release every lease past its expiry (the sweeper); returns what it released."""
        now = repr(self._clock.now())
        cooldown = repr(self.policy.cooldown)
        flat = await self._scripts.call(
            "expire", now, cooldown, limit, fast_id("e"), repr(self.policy.ended_ttl)
        )
        return [Released(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    async def active_count(self) -> int:
        return int(await self._redis.zcard(f"{self._ns}:leases"))

    @staticmethod
    def _check(res: list[object], lease_id: str) -> None:
        reply = LeaseReply(int(str(res[0])))
        if reply is LeaseReply.MISSING:
            raise NotFound(f"lease {lease_id} not found")
        if reply is LeaseReply.REFUSED:
            raise Conflict(f"lease {lease_id}: {res[1]}", code=_code(res, 2))


def _code(res: list[object], index: int) -> str | None:
    """The error code a script reply carries at `index`, if any (None: the class's)."""
    return str(res[index]) if len(res) > index and res[index] else None
