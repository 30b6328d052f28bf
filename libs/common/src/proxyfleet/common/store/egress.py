"""Exit addresses in the registry: health's confirmed-address write (egress.lua) and the
address index it keeps (`<ns>:egress:<ip>`, `<ns>:egress_counts:...`), read back for the
shared-address metric. Grants only read the proxy's `egress_ip` / `egress_net`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.domain.egress import REVOKED_EGRESS_CHANGED, network
from proxyfleet.common.store.fastid import fast_id
from proxyfleet.common.store.mux import ScriptMux
from proxyfleet.common.store.outage import translates_outages
from proxyfleet.common.store.replies import raise_proxy_refusal
from proxyfleet.common.store.scripts import Scripts
from proxyfleet.common.store.transitions import field_args

SHARED_WITH_MAX = 5
"""Most other proxy ids a proxy.egress_shared event names."""


@dataclass(frozen=True, slots=True)
class EgressWrite:
    gen: int
    ended_lease_id: str
    """The lease revoked because the address changed ("" none)."""
    shared: int
    """Proxies on the new address, this one included (0: no address)."""


@dataclass(frozen=True, slots=True)
class AddressCounts:
    """One group's exit addresses (a provider, a provider's zone or a pool)."""

    distinct: int
    """Addresses its proxies leave through."""
    proxies: int
    """Proxies with a known address."""
    shared: int
    """Addresses with more than one of its proxies."""


@translates_outages
class EgressStore:
    def __init__(
        self,
        client: aioredis.Redis,
        clock: Clock,
        *,
        namespace: str = "pf",
        mux: ScriptMux | None = None,
    ) -> None:
        self._redis = client
        self._clock = clock
        self._ns = namespace
        self._scripts = Scripts(client, namespace, mux)

    async def confirm(
        self,
        proxy_id: str,
        ip: str,
        *,
        expected_gen: int | None = None,
        pending: str = "",
        pending_n: int = 0,
        revoke: bool = True,
        fields: dict[str, Any] | None = None,
    ) -> EgressWrite:
        """Make `ip` (normalized; "" forgets the address) the proxy's confirmed exit
        address, with the other fields given in the same write. Announces the change and
        a shared address, and (with `revoke`) revokes the proxy's lease with reason
        `egress_changed` when an address it had is replaced. Raises NotFound, or Conflict
        for a stale generation or a proxy that is not probed (going away)."""
        res = await self._scripts.call(
            "egress",
            proxy_id,
            -1 if expected_gen is None else expected_gen,
            repr(self._clock.now()),
            fast_id("e"),
            ip,
            network(ip),
            pending,
            pending_n,
            "1" if revoke else "0",
            REVOKED_EGRESS_CHANGED,
            SHARED_WITH_MAX,
            *field_args(fields or {}),
        )
        raise_proxy_refusal(proxy_id, res, "its address is not recorded")
        return EgressWrite(gen=int(res[1]), ended_lease_id=str(res[2]), shared=int(res[3]))

    async def proxies_on(self, ip: str) -> set[str]:
        """The ids of the proxies whose confirmed exit address is `ip`."""
        return cast(set[str], await self._redis.smembers(f"{self._ns}:egress:{ip}"))

    async def counts(self, kind: str, *name: str) -> AddressCounts:
        """Distinct and total of one group: kind `provider` (name: provider), `zone`
        (provider, zone) or `pool` (pool). Two reads of one key each: no address is read."""
        group = ":".join((kind, *name))
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hlen(f"{self._ns}:egress_counts:{group}")
            pipe.hmget(f"{self._ns}:egress_summary", f"{group}|proxies", f"{group}|shared")
            distinct, (proxies, shared) = await pipe.execute()
        return AddressCounts(int(distinct), int(proxies or 0), int(shared or 0))

    async def groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every group (kind, name parts) that has proxies with a known address."""
        fields = cast(list[str], await self._redis.hkeys(f"{self._ns}:egress_summary"))
        out: set[tuple[str, tuple[str, ...]]] = set()
        for field in fields:
            kind, *name = field.rsplit("|", 1)[0].split(":")
            out.add((kind, tuple(name)))
        return sorted(out)
