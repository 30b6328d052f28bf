"""After one fault: wait for the outbox, read leases, registry and stream back, and run
every audit on what the load recorded (the light load's and the heavy load's alike)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tests.faults.audit import (
    Finding,
    Lease,
    Request,
    StreamEvent,
    Verdict,
    check_client_holds,
    check_dead_grants,
    check_lease_events,
    check_leases,
    check_lifecycle,
    check_no_server_errors,
    check_resources,
    check_stream_holds,
    check_stream_once,
    check_write_latency,
)
from tests.faults.harness import Fleet

if TYPE_CHECKING:
    from tests.faults.scenarios import Window

WRITE_LIMIT = 1.0
"""Seconds a create or delete may take, NATS outage or not (normally ~10-50 ms)."""

StateReader = Callable[[list[str]], dict[str, str | None]]


def audit_window(
    fleet: Fleet,
    w: Window,
    leases: Sequence[Lease],
    requests: Sequence[Request],
    before: dict[str, int],
    warm: float,
    read_states: StateReader | None = None,
) -> tuple[Verdict, list[StreamEvent]]:
    """The verdict of one fault window and the stream it read. `leases` are the ones whose
    state is read back (`read_states`, fleet.lease_states by default); every other check
    takes what the load recorded, in `w` and in `requests`."""
    w.findings += fleet.outbox.settle()
    read = read_states or fleet.lease_states
    verdict = check_leases(
        leases, read([x.lease_id for x in leases]), time.time(), w.redis_reset_at
    )
    reset = w.redis_reset_at
    # The registry first, then the stream once every entry written up to that read is
    # published: a transition made between the two reads (a delete finishing) is then on
    # both sides or on neither, never in the registry alone.
    registry = {} if reset else {i: p["gen"] for i, p in fleet.registry().items()}
    w.findings += fleet.outbox.published(fleet.outbox.mark())
    # Events of this run's window (its leases), and the whole stream for the chains.
    events = fleet.events()
    recent = [e for e in events if e.time >= w.start - warm - 1]
    chains = [e for e in events if reset is None or e.time < reset]
    verdict.findings += w.findings
    verdict.findings += check_stream_holds(recent)
    verdict.findings += check_stream_once(events)
    verdict.findings += check_lifecycle(chains, registry)
    fleet.deleted |= w.deleted
    verdict.findings += check_resources(before, fleet.resources(), fleet.deleted)
    verdict.findings += check_write_latency(w.writes, WRITE_LIMIT)
    verdict.findings += check_no_server_errors([*requests, *w.writes])
    return verdict, events


def audit_recorded(
    verdict: Verdict,
    leases: Sequence[Lease],
    events: Sequence[StreamEvent],
    w: Window,
    seen: set[Finding],
) -> None:
    """The checks of every lease the load recorded (client holds, dead grants, each 2xx
    lease's events), then each finding reported once over the whole run."""
    verdict.findings += check_client_holds(leases)
    verdict.findings += check_dead_grants(leases, w.dead)
    lost_events, verdict.events_lost_with_redis = check_lease_events(
        leases, events, w.redis_reset_at
    )
    verdict.findings += lost_events
    # A finding that stays (a lost event, a destroyed proxy) is reported by the first
    # fault that shows it, not again by every later one.
    verdict.findings = [f for f in dict.fromkeys(verdict.findings) if f not in seen]
    seen.update(verdict.findings)
