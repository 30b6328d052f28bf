"""Pages of proxies in creation order, read from a sorted set of ids (all scored 0, so in
id order): `pf:proxies`, every proxy, or `pf:provider:<name>`, one provider's proxies that
are not deleted (kept by the Lua scripts, see lua/_lib.lua).

The cursor is the last id of a page. An id whose hash is gone (a deleted proxy past its
TTL) is taken out of the set it was read from; so is a deleted proxy found in a provider's
index (a version from before the index left it there: deleted is final).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import redis.asyncio as aioredis

from proxyfleet.common.store.codec import proxy_from_hash
from proxyfleet.common.wire.models import Phase, Proxy

MIN_BATCH = 100
"""Fewest ids read per round trip (a page with a selective filter reads on)."""


@dataclass(frozen=True, slots=True)
class ProxyFilter:
    provider: str | None = None
    zone: str | None = None
    phase: Phase | None = None
    labels: dict[str, str] | None = None
    exclude_phase: Phase | None = None
    """Leave out proxies in that phase (the API hides deleted ones)."""

    def matches(self, p: Proxy) -> bool:
        if p.phase == self.exclude_phase:
            return False
        if self.provider and p.provider != self.provider:
            return False
        if self.zone and p.zone != self.zone:
            return False
        if self.phase and p.phase != self.phase:
            return False
        labels = self.labels
        return not labels or all(p.labels.get(k) == v for k, v in labels.items())

    @property
    def skips_deleted(self) -> bool:
        """No deleted proxy can match: a provider's index holds all it may return."""
        if self.exclude_phase is Phase.DELETED:
            return True
        return self.phase is not None and self.phase is not Phase.DELETED


async def read_proxies(redis: aioredis.Redis, ns: str, ids: list[str]) -> list[Proxy | None]:
    """The proxies of `ids`, one pipelined round trip (None: no such hash), and a second
    for how many proxies share each exit address among them (`egress_shared`: the size of
    the address's index set, which no script writes on each member)."""
    async with redis.pipeline(transaction=False) as pipe:
        for pid in ids:
            pipe.hgetall(f"{ns}:proxy:{pid}")
        rows = cast(list[dict[str, str]], await pipe.execute())
    proxies = [proxy_from_hash(r) if r else None for r in rows]
    addresses = sorted({p.egress_ip for p in proxies if p is not None and p.egress_ip})
    if addresses:
        async with redis.pipeline(transaction=False) as pipe:
            for ip in addresses:
                pipe.scard(f"{ns}:egress:{ip}")
            sizes = dict(zip(addresses, cast(list[int], await pipe.execute()), strict=True))
        for p in proxies:
            if p is not None:
                p.egress_shared = sizes.get(p.egress_ip, 0)
    return proxies


async def proxy_page(
    redis: aioredis.Redis,
    ns: str,
    key: str,
    flt: ProxyFilter,
    *,
    cursor: str = "",
    limit: int = 100,
) -> tuple[list[Proxy], str]:
    """One page of the proxies in sorted set `key` after `cursor` that match `flt`;
    returns (page, next cursor or '')."""
    if limit <= 0:
        return [], ""
    indexed = key != f"{ns}:proxies"
    out: list[Proxy] = []
    start = f"({cursor}" if cursor else "-"
    batch = max(limit, MIN_BATCH)
    while True:
        ids = cast(list[str], await redis.zrangebylex(key, start, "+", 0, batch))
        if not ids:
            return out, ""
        gone: list[str] = []
        for pid, proxy in zip(ids, await read_proxies(redis, ns, ids), strict=True):
            if proxy is None or (indexed and proxy.phase is Phase.DELETED):
                gone.append(pid)
            elif flt.matches(proxy):
                out.append(proxy)
                if len(out) == limit:
                    if gone:
                        await redis.zrem(key, *gone)
                    more = pid != ids[-1] or len(ids) == batch
                    return out, (pid if more else "")
        if gone:
            await redis.zrem(key, *gone)
        if len(ids) < batch:
            return out, ""
        start = f"({ids[-1]}"
