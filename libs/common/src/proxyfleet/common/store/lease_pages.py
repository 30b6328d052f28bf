"""Pages of active leases, soonest expiry first (the `leases` sorted set, scored by expiry).

A cursor is `<expires_at>_<lease_id>` of the last lease of a page: the next page starts
after it in (expiry, id) order. A renewal moves a lease later, so a listing is not a
snapshot: a lease renewed while it is read may show twice or not at all, as in any
paginated listing of changing data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

import redis.asyncio as aioredis

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.store.codec import lease_from_hash
from proxyfleet.common.wire.models import Lease

CURSOR_PATTERN = r"^([0-9]{1,17}(\.[0-9]{1,24})?(e[+-]?[0-9]{1,3})?_[A-Za-z0-9_-]{1,64})?$"
"""What a next_cursor looks like (empty: the first page)."""
_CURSOR = re.compile(CURSOR_PATTERN)
BATCH = 200
MAX_EXAMINED = 5000
"""Most leases one page reads before it answers (a short page with a cursor to go on):
bounds the cost of a client's listing among many other clients' leases."""


@dataclass(frozen=True, slots=True)
class LeasePage:
    items: list[Lease]
    next_cursor: str
    """Where the next page starts; empty when this is the last."""


def parse_cursor(cursor: str) -> tuple[float, str] | None:
    """(expires_at, lease_id) of a cursor, None for the first page; InvalidInput if
    malformed (a 400, never silently page one)."""
    if not _CURSOR.fullmatch(cursor):
        raise InvalidInput(
            "query parameter cursor: not a next_cursor this API gave", code="invalid_cursor"
        )
    if not cursor:
        return None
    score, lease_id = cursor.split("_", 1)
    return float(score), lease_id


def cursor_of(expires_at: float, lease_id: str) -> str:
    """repr: the float's exact digits, so the next page starts exactly after this lease."""
    return f"{expires_at!r}_{lease_id}"


async def active_page(
    redis: aioredis.Redis, ns: str, *, owner: str, limit: int, cursor: str = ""
) -> LeasePage:
    """Active leases after `cursor`; `owner` (a token's name) sees only its own, "" all."""
    after = parse_cursor(cursor)
    key = f"{ns}:leases"
    rank = 0 if after is None else int(await redis.zcount(key, "-inf", f"({after[0]!r}"))
    out: list[Lease] = []
    examined = 0
    while examined < MAX_EXAMINED:
        entries = cast(
            list[tuple[str, float]],
            await redis.zrange(key, rank, rank + BATCH - 1, withscores=True),
        )
        if not entries:
            return LeasePage(out, "")
        rank += len(entries)
        todo = [(lid, score) for lid, score in entries if after is None or (score, lid) > after]
        examined += len(entries)
        async with redis.pipeline(transaction=False) as pipe:
            for lid, _ in todo:
                pipe.hgetall(f"{ns}:lease:{lid}")
            hashes = cast(list[dict[str, str]], await pipe.execute())
        for (lid, score), data in zip(todo, hashes, strict=True):
            if not data or data.get("state", "active") != "active":
                continue  # ended between the two reads
            lease = lease_from_hash(data)
            if owner and lease.client != owner:
                continue
            out.append(lease)
            if len(out) == limit:
                return LeasePage(out, cursor_of(score, lid))
        if len(entries) < BATCH:
            return LeasePage(out, "")
    # Read enough for one answer: go on from the last lease read.
    last_id, last_score = entries[-1]
    return LeasePage(out, cursor_of(last_score, last_id))


async def lease_of_proxy(redis: aioredis.Redis, ns: str, proxy_id: str, owner: str) -> LeasePage:
    """The proxy's active lease (a page of at most one)."""
    lease_id = cast(str | None, await redis.hget(f"{ns}:proxy:{proxy_id}", "lease_id"))
    if not lease_id:
        return LeasePage([], "")
    data = cast(dict[str, str], await redis.hgetall(f"{ns}:lease:{lease_id}"))
    if not data or data.get("state", "active") != "active":
        return LeasePage([], "")
    lease = lease_from_hash(data)
    return LeasePage([] if owner and lease.client != owner else [lease], "")
