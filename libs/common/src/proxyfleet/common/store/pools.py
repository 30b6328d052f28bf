"""Pools in Redis: their declarations (`pool:<name>`, `pools`), members (`pool_members:<name>`,
kept by the proxy scripts), grantable members (`avail_pool:<name>`), refused grants
(`pool_refused:<name>`), statuses (`pool_status:<name>`), and the writes that take a proxy
out of rotation (`withhold`). Every change that others must hear of is one Lua script that
appends its event to the outbox; the controller's writes are fenced by its pool's lock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import msgspec
import redis.asyncio as aioredis

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.domain.pool_spec import POOL_LABEL, Owner, PoolRecord, PoolSpec, PoolStatus
from proxyfleet.common.store.creates import Fence
from proxyfleet.common.store.fastid import fast_id
from proxyfleet.common.store.outage import translates_outages
from proxyfleet.common.store.replies import (
    FencedOut,
    PoolReply,
    ProxyReply,
    raise_proxy_refusal,
)
from proxyfleet.common.store.scripts import Scripts
from proxyfleet.common.wire.events import EventData, EventType
from proxyfleet.common.wire.models import Withheld

MEMBER_FIELDS = (
    "provider", "zone", "phase", "created_at", "updated_at", "lease_id", "avail_at",
    "withheld", "withheld_at", "reason",
)  # fmt: skip
"""What `member_rows` reads of each member, in this order (a few fields, not the whole hash:
the controller reads every member of every pool on every pass)."""
ROWS_PER_CALL = 500
"""Members one `pool_rows` (or `pool_blocked`) script call reads: a pass packs and parses a
call per 500 members, not a command per member; each call holds Redis about 2 ms."""

_spec_json = msgspec.json.Encoder(order="sorted")
_spec = msgspec.json.Decoder(PoolSpec)
_status = msgspec.json.Decoder(PoolStatus)
_status_json = msgspec.json.Encoder()
_json = msgspec.json.Encoder()
_OWNER_NAMES = {Owner.API: "the API", Owner.CONFIG: "the config file", Owner.KUBERNETES:
                "the Kubernetes resource"}  # fmt: skip


class PoolOwned(Conflict):
    """Another source declares this pool; only it may change or delete it."""

    code = "pool_owned"

    def __init__(self, name: str, owner: str, ref: str) -> None:
        where = _OWNER_NAMES.get(Owner(owner), owner) + (f" {ref}" if ref else "")
        super().__init__(f"pool {name} is declared by {where}: change or delete it there")
        self.owner = owner


@dataclass(frozen=True, slots=True)
class Applied:
    gen: int
    changed: bool


def desired_after(spec: PoolSpec, old: PoolSpec | None, old_desired: int) -> int:
    """The desired size once `spec` replaces `old`: its size; with autoscale, the current
    desired size within the new bounds, unless the new spec sets another size."""
    if old is None or spec.autoscale is None or old.size != spec.size:
        return spec.start_size()
    return min(max(old_desired, spec.autoscale.min), spec.autoscale.max)


@translates_outages
class PoolStore:
    def __init__(self, client: aioredis.Redis, clock: Clock, *, namespace: str = "pf") -> None:
        self._redis = client
        self._clock = clock
        self._ns = namespace
        self._scripts = Scripts(client, namespace)

    def _key(self, *parts: str) -> str:
        return ":".join((self._ns, *parts))

    async def apply(
        self,
        name: str,
        spec: PoolSpec,
        owner: Owner,
        owner_ref: str = "",
        *,
        expected_gen: int | None = None,
    ) -> Applied:
        """Declare `name` or change its spec. PoolOwned when another source declares it,
        Conflict when it is being deleted or (with expected_gen) changed meanwhile."""
        for _ in range(5):  # the desired size depends on the current spec: compare and set
            current = await self.get(name)
            old_desired = current.desired if current else 0
            desired = desired_after(spec, current.spec if current else None, old_desired)
            gen = current.gen if current else 0
            if expected_gen is not None and gen != expected_gen:
                raise Conflict(f"pool {name} changed (generation {gen}, not {expected_gen})")
            res = await self._scripts.call(
                "pool_apply", name, owner.value, owner_ref, _spec_json.encode(spec).decode(),
                desired, repr(self._clock.now()), fast_id("e"), gen, "spec",
                spec.egress_exclusive or "",
            )  # fmt: skip
            reply = _pool_reply(res)
            if reply in (PoolReply.DONE, PoolReply.UNCHANGED):
                return Applied(int(res[1]), changed=reply is PoolReply.DONE)
            if reply is PoolReply.OWNED:
                raise PoolOwned(name, str(res[1]), str(res[2]))
            if reply is PoolReply.DELETING:
                raise Conflict(f"pool {name} is being deleted", code="pool_deleting")
        raise Conflict(f"pool {name} keeps changing: try again")

    async def get(self, name: str) -> PoolRecord | None:
        return (await self.get_many([name]))[0]

    async def get_many(self, names: Sequence[str]) -> list[PoolRecord | None]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hgetall(self._key("pool", name))
                pipe.get(self._key("pool_status", name))
            rows = await pipe.execute()
        return [_record(n, rows[2 * i], rows[2 * i + 1]) for i, n in enumerate(names)]

    async def names(self) -> list[str]:
        return [str(n) for n in await self._redis.zrange(self._key("pools"), 0, -1)]

    async def all(self) -> list[PoolRecord]:
        return [r for r in await self.get_many(await self.names()) if r is not None]

    async def delete(self, name: str, owner: Owner, *, keep_proxies: bool = False) -> bool:
        """Ask for the pool's delete (its controller drains and deletes its members, then
        the pool), or with keep_proxies remove it now and leave its members to the plain
        fleet. False when it was being deleted already."""
        res = await self._scripts.call(
            "pool_delete", name, owner.value, "1" if keep_proxies else "0",
            repr(self._clock.now()), fast_id("e"), POOL_LABEL,
        )  # fmt: skip
        reply = _pool_reply(res)
        if reply is PoolReply.MISSING:
            raise NotFound(f"pool {name} not found")
        if reply is PoolReply.OWNED:
            raise PoolOwned(name, str(res[1]), str(res[2]))
        return reply is PoolReply.DONE

    async def remove_if_empty(self, name: str, fence: Fence) -> bool:
        """Remove a pool being deleted once it has no member left (pool.deleted)."""
        res = await self._scripts.call(
            "pool_remove", name, repr(self._clock.now()), fast_id("e"), fence.lock, fence.token
        )
        return _pool_reply(res) is PoolReply.DONE

    async def scale(self, name: str, desired: int, reason: str, gen: int, fence: Fence) -> bool:
        """Set the desired size autoscale decided (pool.scaled); False when unchanged, the
        pool gone or being deleted, or its spec changed since generation `gen`."""
        res = await self._scripts.call(
            "pool_scale", name, desired, reason, repr(self._clock.now()), fast_id("e"),
            fence.lock, fence.token, gen,
        )  # fmt: skip
        return _pool_reply(res) is PoolReply.DONE

    async def announce(
        self, name: str, event_type: EventType, data: EventData, fence: Fence
    ) -> bool:
        """Append a pool event that comes with no other change (a condition changed, a
        recycle began); False when the pool is gone."""
        pairs: list[str] = []
        for key, value in msgspec.to_builtins(data).items():
            pairs += [key, _json.encode(value).decode()]
        res = await self._scripts.call(
            "pool_event", name, event_type.value, repr(self._clock.now()), fast_id("e"),
            fence.lock, fence.token, *pairs,
        )  # fmt: skip
        return _pool_reply(res) is PoolReply.DONE

    async def write_status(self, name: str, status: PoolStatus, ttl: float) -> None:
        """The controller's view of the pool, kept `ttl` seconds (a stale one expires)."""
        await self._redis.set(
            self._key("pool_status", name), _status_json.encode(status), px=max(1, int(ttl * 1000))
        )

    async def marks(self, name: str) -> tuple[float, float]:
        """Autoscale's (low_since, high_since), kept with the pool for the next replica."""
        low, high = await self._redis.hmget(self._key("pool", name), "low_since", "high_since")
        return float(low or 0), float(high or 0)

    async def save_marks(self, name: str, low_since: float, high_since: float) -> None:
        if await self._redis.exists(self._key("pool", name)):
            await self._redis.hset(
                self._key("pool", name),
                mapping={"low_since": repr(low_since), "high_since": repr(high_since)},
            )

    async def members(self, name: str) -> list[str]:
        """The pool's members that are not deleted, oldest first."""
        return [str(i) for i in await self._redis.zrange(self._key("pool_members", name), 0, -1)]

    async def member_rows(self, ids: Sequence[str]) -> list[list[str | None]]:
        """MEMBER_FIELDS of each member (Nones for one whose hash is gone)."""
        if not ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for start in range(0, len(ids), ROWS_PER_CALL):
                chunk = ids[start : start + ROWS_PER_CALL]
                await self._scripts.queue(
                    pipe, "pool_rows", len(MEMBER_FIELDS), *MEMBER_FIELDS, *chunk
                )
            parts = cast(list[list[list[str | None]]], await pipe.execute())
        return [row for part in parts for row in part]

    async def take_refused(self, name: str) -> int:
        """Grants for the pool refused (503) since the last call."""
        return int(await self._redis.getset(self._key("pool_refused", name), 0) or 0)

    async def blocked_targets(self, ids: Sequence[str], since: float) -> list[list[str]]:
        """For each proxy, the targets that reported it `blocked` at or after `since`."""
        if not ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for start in range(0, len(ids), ROWS_PER_CALL):
                chunk = ids[start : start + ROWS_PER_CALL]
                await self._scripts.queue(pipe, "pool_blocked", repr(since), *chunk)
            parts = cast(list[list[list[str]]], await pipe.execute())
        return [row for part in parts for row in part]

    async def withhold(
        self,
        proxy_id: str,
        kind: Withheld,
        reason: str = "",
        *,
        actor: str = "",
        fence: Fence | None = None,
    ) -> bool:
        """Drain or quarantine a proxy, or (Withheld.NO) put a quarantined one back in
        rotation, with its event. False when there was nothing to do (already so; a
        quarantined proxy is not drained; only a quarantined one goes back)."""
        res = await self._scripts.call(
            "withhold", proxy_id, kind.value, reason, repr(self._clock.now()), fast_id("e"),
            actor, fence.lock if fence else "", fence.token if fence else "",
        )  # fmt: skip
        return raise_proxy_refusal(proxy_id, res, "cannot be withheld") is ProxyReply.OK


def _pool_reply(res: list[Any]) -> PoolReply:
    """A pool script's reply; FencedOut for a fenced write refused."""
    reply = PoolReply(int(res[0]))
    if reply is PoolReply.FENCED_OUT:
        raise FencedOut("the pool's lock passed to another replica: nothing written")
    return reply


def _record(name: str, data: dict[str, str], status: str | None) -> PoolRecord | None:
    if not data:
        return None
    return PoolRecord(
        name=name,
        spec=_spec.decode(data["spec"]),
        owner=Owner(data["owner"]),
        owner_ref=data.get("owner_ref", ""),
        gen=int(data.get("gen", 1)),
        desired=int(data.get("desired", 0)),
        created_at=float(data.get("created_at", 0)),
        updated_at=float(data.get("updated_at", 0)),
        deleting=bool(data.get("deleting")),
        status=_status.decode(status) if status else None,
    )
