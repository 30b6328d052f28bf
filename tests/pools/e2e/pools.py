"""The pools the scenarios declare (through the store, owner: the API), and the grants they
put on them through the store (`GrantRequest(pool=...)`, which counts refusals for
autoscale: the API's `"pool"` body field is not there yet)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from tests.pools.e2e.fleet import NS, PoolFleet

from proxyfleet.common.clock import SystemClock
from proxyfleet.common.errors import Unavailable
from proxyfleet.common.models import Lease
from proxyfleet.common.pool_spec import AutoQuarantine, Autoscale, PoolSpec
from proxyfleet.common.store import GrantRequest, LeaseStore, connect_redis
from proxyfleet.common.store.leases import LeasePolicy

MAIN = "main"
MAIN_SPEC = PoolSpec(provider="local", size=20, max_surge=4, drain_timeout=6)
RECYCLE_AGE = 20.0
AUTO = "auto"
AUTO_SPEC = PoolSpec(
    provider="local",
    size=1,
    autoscale=Autoscale(
        min=1, max=3, target_free=0, max_free=0, scale_up_after=1, scale_down_after=2
    ),
)
QUAR = "quar"
QUAR_SPEC = PoolSpec(
    provider="local", size=2, quarantine=AutoQuarantine(blocked_targets=3, within=300)
)
KILL = "kill"
KILL_SPEC = PoolSpec(provider="local", size=6, max_surge=2, drain_timeout=5)
ALL = {MAIN: MAIN_SPEC, AUTO: AUTO_SPEC, QUAR: QUAR_SPEC, KILL: KILL_SPEC}
"""Declared as the fleet starts; each scenario declares its pool again (a Redis reset may
have taken it)."""


@dataclass
class Pressure:
    """Grants held on one pool until it has `want` members leased, refusals counted, the
    pool's status seen after each refusal kept."""

    fleet: PoolFleet
    pool: str
    held: list[Lease] = field(default_factory=list)
    refused: int = 0
    statuses: list[dict[str, Any]] = field(default_factory=list)

    def hold(self, want: int, within: float) -> None:
        asyncio.run(self._hold(want, within))

    def release(self) -> None:
        asyncio.run(self._release())

    async def _hold(self, want: int, within: float) -> None:
        client = connect_redis(self.fleet.redis.url)
        leases = LeaseStore(client, SystemClock(), LeasePolicy(cooldown=0.2), namespace=NS)
        deadline = time.monotonic() + within
        try:
            while len(self.held) < want:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"pool {self.pool}: {len(self.held)} of {want} leased after "
                        f"{within:.0f}s, {self.refused} refused; last status "
                        f"{self.statuses[-1:] or self.fleet.status(self.pool)}"
                    )
                try:
                    req = GrantRequest(ttl=120, pool=self.pool, holder="e2e-pressure")
                    self.held.append(await leases.grant(req))
                except Unavailable:
                    self.refused += 1
                    self.statuses.append(self.fleet.status(self.pool))
                    await asyncio.sleep(0.2)
        finally:
            await client.aclose()

    async def _release(self) -> None:
        client = connect_redis(self.fleet.redis.url)
        leases = LeaseStore(client, SystemClock(), LeasePolicy(cooldown=0.2), namespace=NS)
        try:
            for lease in self.held:
                await leases.release(lease.id, lease.epoch)
        finally:
            await client.aclose()
