"""The fault rows on a three-server NATS cluster (issue 25): the event stream's leader
killed -9 and brought back; two servers of three stopped (no quorum) and brought back.
The full suite only: a fleet of their own, on the cluster."""

from __future__ import annotations

import asyncio
import time

import nats
import nats.errors
from tests.faults import checks
from tests.faults.audit import Finding
from tests.faults.harness import Fleet
from tests.faults.outbox import SETTLE
from tests.faults.scenarios import Inject, Plan, Window

from proxyfleet.common.wire.subjects import EVENT_STREAM
from proxyfleet.devstack.nats_cluster import NatsCluster

NODES = 3
ELECTED_WITHIN = 30.0
"""Seconds for a new stream leader after a kill (JetStream elects 4 to 9 s after the last
heartbeat; more on a busy machine)."""
CAUGHT_UP_WITHIN = 60.0
"""Seconds for a server brought back to route, rejoin and catch its replica up."""

CLUSTER = Plan(
    nats_outage=10,
    warm=5,
    after=5,
    two_api_seconds=0,
    faults=["nats node kill (cluster)", "nats no quorum (cluster)"],
)


def _cluster(fleet: Fleet) -> NatsCluster:
    if fleet.cluster is None:
        raise RuntimeError("the cluster rows need a Fleet(nats_nodes=3)")
    return fleet.cluster


async def _event_stream_state(url: str) -> tuple[str, bool]:
    """The event stream's leader ("" when none answers) and whether every other replica
    is current."""

    async def quiet(exc: Exception) -> None:
        """A refused server (the one killed) is expected: not a traceback per poll."""

    try:
        nc = await nats.connect(
            url.split(","), connect_timeout=2, max_reconnect_attempts=0, error_cb=quiet
        )
    except (nats.errors.Error, OSError, TimeoutError):
        return "", False
    try:
        info = await nc.jetstream(timeout=1.0).stream_info(EVENT_STREAM)
    except (nats.errors.Error, TimeoutError):  # no leader: no quorum or an election
        return "", False
    finally:
        await nc.close()
    if not info.cluster or not info.cluster.leader:
        return "", False
    replicas = info.cluster.replicas or []
    caught_up = len(replicas) == NODES - 1 and all(r.current for r in replicas)
    return info.cluster.leader, caught_up


def event_stream_leader(fleet: Fleet) -> str:
    return asyncio.run(_event_stream_state(_cluster(fleet).url))[0]


def event_stream_caught_up(fleet: Fleet) -> bool:
    return asyncio.run(_event_stream_state(_cluster(fleet).url))[1]


def services_running(fleet: Fleet) -> list[Finding]:
    """A service that ended by itself (the fleet restarts none) is a finding: the audit
    alone would pass a fleet whose provisioner died, as long as nothing asked it."""
    return [
        Finding("service_exited", f"{name} exited with {proc.returncode}")
        for name, proc in fleet.stack.processes.items()
        if proc.poll() is not None
    ]


def _back(fleet: Fleet, w: Window, back: float) -> None:
    """After the servers came back: the cluster formed, the outbox drained and the event
    stream's replicas current again, each timed from `back`."""
    cluster = _cluster(fleet)
    fleet.wait("the cluster formed", lambda: bool(cluster.meta_leader()), CAUGHT_UP_WITHIN)
    w.recovered.append(f"cluster formed +{time.monotonic() - back:.1f}s")
    fleet.wait("the outbox drained", lambda: fleet.outbox.length() == 0, SETTLE)
    w.recovered.append(f"outbox drained +{time.monotonic() - back:.1f}s")
    fleet.wait("the event stream caught up", lambda: event_stream_caught_up(fleet), 60)
    w.recovered.append(f"replicas current +{time.monotonic() - back:.1f}s")
    w.findings += services_running(fleet)


def node_kill(fleet: Fleet, w: Window, plan: Plan) -> None:
    """kill -9 the server leading the event stream, bring it back after `nats_outage`."""
    leader = event_stream_leader(fleet)
    if not leader:
        raise AssertionError("no event stream leader before the kill")
    node = _cluster(fleet).node(leader)
    node.kill()
    t0 = time.monotonic()
    took = fleet.wait(
        "a new event stream leader",
        lambda: event_stream_leader(fleet) not in ("", leader),
        ELECTED_WITHIN,
    )
    w.recovered.append(f"killed {leader} (stream leader): new leader in {took:.1f}s")
    time.sleep(max(0.0, plan.nats_outage - (time.monotonic() - t0)))
    node.start()
    back = time.monotonic()
    w.recovered.append(f"{leader} down {back - t0:.0f}s")
    _back(fleet, w, back)


def no_quorum(fleet: Fleet, w: Window, plan: Plan) -> None:
    """Stop two servers of three (SIGTERM) for `nats_outage`: JetStream takes nothing, the
    API keeps granting (writes wait in the outbox); then bring both back."""
    stopped = _cluster(fleet).nodes[:2]
    for node in stopped:
        node.stop()
    t0 = time.monotonic()
    w.writes += checks.timed_writes(fleet, w)
    longest = 0
    # Sampling the outbox's length while the load runs (a figure, not a synchronisation).
    while time.monotonic() - t0 < plan.nats_outage:
        longest = max(longest, fleet.outbox.length())
        time.sleep(0.2)
    for node in stopped:
        node.start()
    back = time.monotonic()
    names = "+".join(n.name for n in stopped)
    w.recovered.append(f"{names} stopped {back - t0:.0f}s, outbox at most {longest}")
    _back(fleet, w, back)


INJECT_CLUSTER: dict[str, Inject] = {
    "nats node kill (cluster)": node_kill,
    "nats no quorum (cluster)": no_quorum,
}
