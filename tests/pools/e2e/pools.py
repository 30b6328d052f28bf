"""The pools the scenarios declare (through the store, owner: the API), and grants held on
one of them through the API (`"pool"` in the body: its refusals count for autoscale)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tests.pools.e2e.fleet import PoolFleet

from proxyfleet.common.domain.pool_spec import AutoQuarantine, Autoscale, PoolSpec

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
    """Grants held on one pool (through the API) until it has `want` members leased,
    refusals (503) counted, the pool's status seen after each refusal kept."""

    fleet: PoolFleet
    pool: str
    held: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0
    statuses: list[dict[str, Any]] = field(default_factory=list)

    def hold(self, want: int, within: float) -> None:
        deadline = time.monotonic() + within
        while len(self.held) < want:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"pool {self.pool}: {len(self.held)} of {want} leased after {within:.0f}s, "
                    f"{self.refused} refused; last status {self.fleet.status(self.pool)}"
                )
            body = {"pool": self.pool, "ttl": 120, "holder": "e2e-pressure"}
            r = self.fleet.client.post("/v1/leases", json=body)
            if r.status_code == 201:
                self.held.append(r.json())
                continue
            assert r.status_code == 503, r.text
            self.refused += 1
            self.statuses.append(self.fleet.status(self.pool))
            time.sleep(0.2)  # a client's pause between tries, not a threshold

    def release(self) -> None:
        for lease in self.held:
            r = self.fleet.client.post(
                f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
            )
            assert r.is_success, r.text
