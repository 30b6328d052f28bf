"""The fault row on Redis behind Sentinel (issue 25): kill -9 the primary under the grant
load, with every service on the Sentinels' URL and --redis-wait-replicas 1. The audit is
the other rows' (nothing lost, no double hold, intents once); the row gives how long
Sentinel took to promote a replica and the time from the kill to the first 2xx grant.
The full suite only: a fleet of its own."""

from __future__ import annotations

import time

from tests.faults.cluster_scenarios import services_running
from tests.faults.harness import Fleet
from tests.faults.scenarios import Inject, Plan, Window

from proxyfleet.devstack.sentinel import SentinelGroup, port_of

PROMOTED_WITHIN = 30.0
"""Seconds for the Sentinels to agree the primary is down (1 s) and promote a replica
(failover-timeout 10 s; a few seconds on a quiet machine)."""

SENTINEL = Plan(
    nats_outage=0,
    warm=5,
    after=10,
    two_api_seconds=0,
    faults=["redis failover (sentinel)"],
)


def _group(fleet: Fleet) -> SentinelGroup:
    if fleet.sentinels is None:
        raise RuntimeError("the Sentinel row needs a Fleet(sentinel=True)")
    return fleet.sentinels


def _named_primary(group: SentinelGroup) -> int:
    """The primary's port as a Sentinel names it (0 while none answers)."""
    try:
        return group.primary_port()
    except RuntimeError:
        return 0


def primary_failover(fleet: Fleet, w: Window, plan: Plan) -> None:
    group = _group(fleet)
    old = group.primary_port()
    primary = next(s for s in group.redis if port_of(s) == old)
    w.killed_at = time.time()
    primary.process.kill()  # SIGKILL: no goodbye to the replicas
    primary.process.wait(10)
    took = fleet.wait(
        "Sentinel to promote a replica",
        lambda: _named_primary(group) not in (0, old),
        PROMOTED_WITHIN,
    )
    w.recovered.append(f"replica promoted {took:.1f}s after the kill")
    fleet.wait("the API ready after the failover", lambda: fleet.is_ready("api"), 60)
    w.recovered.append(f"API ready +{time.time() - w.killed_at:.1f}s")
    w.findings += services_running(fleet)


INJECT_SENTINEL: dict[str, Inject] = {"redis failover (sentinel)": primary_failover}
