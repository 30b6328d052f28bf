"""The proxy registry: every proxy transition is one atomic, generation-checked script, which
also appends the transition's event (and the intent it implies) to the outbox."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import StoreError
from proxyfleet.common.store.codec import pairs_to_dict, proxy_from_hash, proxy_to_hash
from proxyfleet.common.store.creates import (
    Created,
    Fence,
    Idempotency,
    create_args,
    decode_created,
)
from proxyfleet.common.store.fastid import fast_id
from proxyfleet.common.store.installation import Installation
from proxyfleet.common.store.locks import Locks
from proxyfleet.common.store.mux import ScriptMux
from proxyfleet.common.store.outage import translates_outages
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.store.proxy_pages import ProxyFilter, proxy_page, read_proxies
from proxyfleet.common.store.replies import CreateReply
from proxyfleet.common.store.scripts import Scripts
from proxyfleet.common.store.transitions import Move, TransitionResult
from proxyfleet.common.wire.models import Phase, Proxy


@dataclass(frozen=True, slots=True)
class ProbeClaim:
    proxies: list[Proxy]
    """The claimed proxies, each due now and pushed one interval ahead."""
    replicas: int
    """Health replicas sharing the probes (claimed within the last interval), this one
    included; 1 for a claim without a replica name."""


@translates_outages
class ProxyRegistry:
    def __init__(
        self,
        client: aioredis.Redis,
        clock: Clock,
        *,
        namespace: str = "pf",
        deleted_ttl: int = 86_400,
        mux: ScriptMux | None = None,
        outbox_high_water: int = 0,
    ) -> None:
        """`mux`: run single script calls through a ScriptMux (pipelined).
        `outbox_high_water`: outbox entries at which creates are refused (0: never)."""
        self._redis = client
        self._clock = clock
        self._ns = namespace
        self._deleted_ttl = deleted_ttl
        self._high_water = outbox_high_water
        self._scripts = Scripts(client, namespace, mux)
        self.outbox = Outbox(client, namespace)
        """Where this registry's scripts append their events and intents."""
        self.installation = Installation(client, clock, namespace=namespace)
        """The registry's identity: installation marker and tombstones."""
        self.locks = Locks(client, namespace=namespace)
        """Named locks in the same Redis and namespace (GC's round locks)."""
        self._indexed = False  # the providers' indexes are built (the marker was seen)

    def _key(self, *parts: str) -> str:
        return ":".join((self._ns, *parts))

    async def create(self, proxy: Proxy) -> bool:
        """Store a new proxy; False when the id exists already. A pending proxy's
        `proxy.pending` event and create intent go to the outbox in the same script."""
        return bool((await self.create_many([proxy])).ids)

    async def create_many(
        self,
        proxies: Sequence[Proxy],
        *,
        max_proxies: int | None = None,
        idempotency: Idempotency | None = None,
        fence: Fence | None = None,
    ) -> Created:
        """Store new proxies of one provider in one script (ids that exist are skipped).

        Raises Conflict, and stores nothing, when the provider would have more than
        `max_proxies` (failed and deleted proxies do not count) or the idempotency key was
        used with another body; a key seen before with this body stores nothing and
        returns what that create made. With `fence`, FencedOut and nothing stored unless
        its token holds its lock. All checked atomically with the writes."""
        args = create_args(proxies, max_proxies, idempotency, fence, self._high_water)
        res = await self._scripts.call("create", fast_id("e"), repr(self._clock.now()), *args)
        return decode_created(proxies, res, self._high_water)

    async def adopt(self, proxy: Proxy, hold: float = 0.0) -> bool | None:
        """Register again a proxy whose resource outlived its entry (a store reset), in
        `proxy.phase` (booting, or provisioning to have the runner find its address), with
        its `proxy.adopted` event (and, provisioning, its create intent) in the outbox; no
        grant takes it for `hold` seconds (a lease from before the reset may be in use).
        True adopted, False it exists, None it was deleted (tombstoned: GC's to remove)."""
        flat: list[str] = []
        for k, v in proxy_to_hash(proxy).items():
            if k not in ("phase", "gen", "updated_at"):
                flat += [k, v]
        now = repr(self._clock.now())
        args = (proxy.id, fast_id("e"), now, proxy.phase.value, repr(hold), *flat)
        reply = CreateReply(int(await self._scripts.call("adopt", *args)))
        return None if reply is CreateReply.TOMBSTONED else reply is CreateReply.CREATED

    async def get(self, proxy_id: str) -> Proxy | None:
        return (await read_proxies(self._redis, self._ns, [proxy_id]))[0]

    async def get_many(self, proxy_ids: list[str]) -> list[Proxy | None]:
        return await read_proxies(self._redis, self._ns, proxy_ids)

    async def transition(
        self,
        proxy_id: str,
        to: Phase,
        *,
        expected_gen: int | None = None,
        unleased_only: bool = False,
        delete_reason: str = "",
        **fields: Any,
    ) -> TransitionResult:
        """Move a proxy to `to`, if the lifecycle allows it from its current phase, and
        announce it: the event `proxy.<to>` (`reason` on failed/unhealthy, from the
        `reason` field), `lease.revoked` if it ends a lease, and a delete intent on failed
        or deleting (`delete_reason` says why), all appended to the outbox atomically.

        Raises NotFound, or Conflict when the generation is stale, the move not allowed or
        (with unleased_only) a lease holds the proxy; checked in the same atomic script.
        `fields` are Proxy fields (transitions.WRITABLE): another name is a TypeError.
        """
        move = Move(proxy_id, to, expected_gen, fields, unleased_only, delete_reason)
        return await self._run(move)

    async def update(self, proxy_id: str, *, expected_gen: int | None = None, **fields: Any) -> int:
        """Set fields without a transition (probe streaks, addresses); returns the generation."""
        return (await self._run(Move(proxy_id, None, expected_gen, fields))).gen

    async def update_many(
        self, updates: Sequence[tuple[str, int | None, dict[str, Any]]]
    ) -> list[int | StoreError]:
        """Many `update`s (proxy id, expected generation, fields) in one pipelined round trip;
        per update its generation, or the NotFound/Conflict `update` would have raised."""
        if not updates:
            return []
        moves = [Move(proxy_id, None, expected, fields) for proxy_id, expected, fields in updates]
        now = self._clock.now()
        calls = [m.args(now, self._deleted_ttl) for m in moves]
        async with self._redis.pipeline(transaction=False) as pipe:
            for args in calls:
                await self._scripts.queue(pipe, "transition", *args)
            rows = await pipe.execute()
        out: list[int | StoreError] = []
        for move, res in zip(moves, rows, strict=True):
            try:
                out.append(move.decode(res).gen)
            except StoreError as exc:
                out.append(exc)
        return out

    async def _run(self, move: Move) -> TransitionResult:
        args = move.args(self._clock.now(), self._deleted_ttl)
        return move.decode(await self._scripts.call("transition", *args))

    async def page(
        self,
        *,
        provider: str | None = None,
        zone: str | None = None,
        phase: Phase | None = None,
        labels: dict[str, str] | None = None,
        cursor: str = "",
        limit: int = 100,
        exclude_phase: Phase | None = None,
    ) -> tuple[list[Proxy], str]:
        """One page of proxies in creation order; returns (page, next cursor or '').
        `exclude_phase`: leave out proxies in that phase (the API hides deleted ones).
        One provider's proxies, deleted ones left out, are read from its index."""
        flt = ProxyFilter(provider, zone, phase, labels, exclude_phase)
        if provider and flt.skips_deleted:
            return await self._provider_page(provider, flt, cursor, limit)
        return await proxy_page(
            self._redis, self._ns, self._key("proxies"), flt, cursor=cursor, limit=limit
        )

    async def provider_page(
        self, provider: str, *, phase: Phase | None = None, cursor: str = "", limit: int = 100
    ) -> tuple[list[Proxy], str]:
        """One page of the provider's proxies that are not deleted (in `phase`, if given),
        in creation order; returns (page, next cursor or ''). Read from the provider's
        index, `pf:provider:<name>`: no other provider's proxy is read. Until the indexes
        are built (`index_providers`, on a registry written before they existed) it reads
        every proxy, as `page` did."""
        flt = ProxyFilter(provider, phase=phase, exclude_phase=Phase.DELETED)
        return await self._provider_page(provider, flt, cursor, limit)

    async def _provider_page(
        self, provider: str, flt: ProxyFilter, cursor: str, limit: int
    ) -> tuple[list[Proxy], str]:
        if not self._indexed:
            self._indexed = bool(await self._redis.exists(self._key("provider_index")))
        key = self._key("provider", provider) if self._indexed else self._key("proxies")
        return await proxy_page(self._redis, self._ns, key, flt, cursor=cursor, limit=limit)

    async def index_providers(self, batch: int = 1000) -> int | None:
        """Build the providers' indexes from every proxy, once per store (a registry written
        before they existed; the scripts keep them from then on): None, without a write,
        when the marker `pf:provider_index` says they are built; else how many proxies were
        added to an index."""
        if await self._redis.exists(self._key("provider_index")):
            self._indexed = True
            return None
        after, added = "", 0
        while True:
            after, n = await self._scripts.call(
                "index_providers", after, batch, repr(self._clock.now())
            )
            added += int(n)
            if not after:
                break
        self._indexed = True
        return added

    async def take_zone_turns(self, provider: str, count: int) -> int:
        """Reserve `count` consecutive turns of the provider's zone round robin; returns the
        first (shared by every API replica, kept across restarts)."""
        last = int(await self._redis.incrby(self._key("zone_turn", provider), count))
        return last - count

    async def count_by_phase(self, provider: str) -> dict[Phase, int]:
        raw = cast(dict[str, str], await self._redis.hgetall(self._key("counts", provider)))
        counts = {phase: 0 for phase in Phase}
        for k, v in raw.items():
            counts[Phase(k)] = int(v)
        return counts

    async def claim_probes(self, interval: float, limit: int, replica: str = "") -> list[Proxy]:
        """Proxies whose probe is due, each pushed one interval ahead (shared by replicas)."""
        return (await self.claim_probe_share(interval, limit, replica)).proxies

    async def claim_probe_share(
        self,
        interval: float,
        limit: int,
        replica: str,
        *,
        failed_wait: tuple[float, float] | None = None,
    ) -> ProbeClaim:
        """Like `claim_probes`; with a `replica` name, at most its fair share of the due
        proxies (ceil(due / replicas that claimed within the last interval)), and the
        count of those replicas. A `limit` of 0 claims nothing but counts the replica.
        `failed_wait`: the shortest and longest waits between two probes of a failed
        proxy (only an external one stays on the schedule); each is as long as the proxy
        has been failed, within those bounds (None: one interval)."""
        now = repr(self._clock.now())
        backoff = failed_wait or ()
        reply = await self._scripts.call("claim_probes", now, interval, limit, replica, *backoff)
        rows = reply[1:]
        return ProbeClaim([proxy_from_hash(pairs_to_dict(r)) for r in rows], int(reply[0]))

    async def leave_probe_share(self, replica: str) -> None:
        """A stopping replica leaves the count at once, rather than one interval later."""
        await self._redis.zrem(self._key("probers"), replica)

    async def next_probe_at(self, proxy_id: str) -> float | None:
        """When the proxy's next probe is due (None: not on the probe schedule)."""
        score = await self._redis.zscore(self._key("probe"), proxy_id)
        return None if score is None else float(score)

    async def probe_backlog(self) -> int:
        """How many proxies are due for a probe right now."""
        return int(await self._redis.zcount(self._key("probe"), "-inf", self._clock.now()))

    async def ping(self) -> bool:
        """Redis answers (StoreUnavailable when it does not)."""
        return bool(await self._redis.ping())

    async def size(self) -> int:
        return int(await self._redis.zcard(self._key("proxies")))
