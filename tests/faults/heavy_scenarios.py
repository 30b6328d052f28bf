"""The heavy rows (issue 25): the NATS and Redis faults under wrk's heavy load (heavy.py)
on a fleet of their own (cooldown 0, enough proxies for 64 connections), audited as the
light rows are, with the outbox's and Redis's peaks while the fault lasted."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import redis
from tests.faults.audit import Finding, load_figures
from tests.faults.harness import Fleet
from tests.faults.heavy import HeavyLoad, check_retry_after, sample_leases
from tests.faults.outbox import NAMESPACE, SETTLE
from tests.faults.report import HeavyRow
from tests.faults.scenarios import Window, grants_refused, redis_restart
from tests.faults.verdicts import audit_recorded, audit_window

HEAVY_PROXIES = 100
"""64 connections hold at most 64 leases at once: the rest keep grants from queueing."""


@dataclass
class HeavyPlan:
    warm: float
    freeze: float
    """Seconds NATS is stopped (SIGSTOP: connections open, nothing answered)..."""
    down: float
    """...then killed, and started again this much later."""
    tail: float
    """Seconds of load after NATS is back (its backlog drains under load)."""
    redis_seconds: int
    """wrk's whole run in the Redis row."""
    states: int
    """Leases whose state is read back with a GET each (every lease's events are checked)."""
    faults: list[str] = field(default_factory=list)


HEAVY = HeavyPlan(
    warm=3,
    freeze=15,
    down=10,
    tail=8,
    redis_seconds=20,
    states=2000,
    faults=["nats down (heavy)", "redis restart (AOF) (heavy)"],
)


class Peaks:
    """Samples the outbox's length and Redis's used_memory every 0.2 s while it runs."""

    def __init__(self, redis_url: str) -> None:
        self._url = redis_url
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _sample(self) -> None:
        with redis.Redis.from_url(self._url, socket_timeout=1) as r:
            while not self._stop.wait(0.2):
                with contextlib.suppress(redis.RedisError):  # Redis down: no sample
                    length = int(r.xlen(f"{NAMESPACE}:outbox"))
                    memory = int(r.info("memory")["used_memory"])
                    self.samples.append((time.time(), length, memory))

    def between(self, start: float, end: float) -> tuple[int, int]:
        """The highest outbox length and used_memory sampled in [start, end]."""
        inside = [(n, m) for t, n, m in self.samples if start <= t <= end]
        return max((n for n, _ in inside), default=0), max((m for _, m in inside), default=0)


HeavyInject = Callable[[Fleet, Window, HeavyPlan], None]


def run_heavy(fleet: Fleet, plan: HeavyPlan, seen: set[Finding]) -> list[HeavyRow]:
    return [run_heavy_one(fleet, name, plan, seen) for name in plan.faults]


def _load_seconds(name: str, plan: HeavyPlan) -> int:
    if name.startswith("nats"):
        return round(plan.warm + plan.freeze + plan.down + plan.tail)
    return plan.redis_seconds


def run_heavy_one(fleet: Fleet, name: str, plan: HeavyPlan, seen: set[Finding]) -> HeavyRow:
    t0 = time.monotonic()
    w = Window(apis=[fleet.stack.api_url])
    before = fleet.resources()
    load = HeavyLoad(
        fleet.stack.api_url, fleet.stack.client_token, _load_seconds(name, plan), fleet.base
    )
    with Peaks(fleet.redis.url) as peaks, load:  # leaving: wrk's end first (its -d)
        time.sleep(plan.warm)
        w.start = time.time()
        try:
            HEAVY_INJECT[name](fleet, w, plan)
        except AssertionError as exc:  # a bounded wait ran out: that is the finding
            w.findings.append(Finding("not_recovered", str(exc)))
        w.end = time.time()
    records = load.records
    stopped = time.monotonic()
    w.findings += fleet.outbox.settle()
    w.recovered.append(f"outbox empty {time.monotonic() - stopped:.1f}s after the load stopped")
    w.recovered.append(grants_refused(records.requests, w.start))
    states = sample_leases(records.leases, plan.states)
    verdict, events = audit_window(
        fleet, w, states, records.requests, before, plan.warm, lambda ids: _states(fleet, ids)
    )
    verdict.findings += check_retry_after(records.bare_503)
    audit_recorded(verdict, records.leases, events, w, seen)
    rps, errors, statuses = load_figures(records.requests, w.start, max(w.end, w.start + 1))
    _, _, run_statuses = load_figures(records.requests, load.started, load.ended)
    outbox_peak, memory_peak = peaks.between(w.start, w.end)
    return HeavyRow(
        name, rps, errors, w.recovered, verdict, len(records.leases), len(events), statuses,
        run_rps=load.wrk_rps, run_statuses=run_statuses, outbox_peak=outbox_peak,
        memory_peak=memory_peak, states_read=len(states), seconds=time.monotonic() - t0,
    )  # fmt: skip


def _states(fleet: Fleet, lease_ids: list[str], workers: int = 8) -> dict[str, str | None]:
    """fleet.lease_states over a few threads (one GET per lease)."""
    with ThreadPoolExecutor(workers) as pool:
        parts = pool.map(fleet.lease_states, [lease_ids[i::workers] for i in range(workers)])
    return {k: v for part in parts for k, v in part.items()}


def nats_frozen(fleet: Fleet, w: Window, plan: HeavyPlan) -> None:
    """NATS stopped (SIGSTOP), then killed while stopped and started again later, as the
    issue measured: first every publish hangs, then every connection is refused."""
    assert fleet.nats.proc is not None
    os.killpg(fleet.nats.proc.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    time.sleep(plan.freeze)
    fleet.nats.kill()  # SIGKILL ends a stopped process too
    time.sleep(plan.down)
    mark = fleet.outbox.mark()  # the newest entry written while NATS was away
    fleet.nats.start()
    back = time.monotonic()
    w.recovered.append(f"NATS frozen {plan.freeze:g}s, then down {back - t0 - plan.freeze:.0f}s")
    took = fleet.wait(
        "every service ready after NATS",
        lambda: all(fleet.is_ready(s) for s in ("api", "provisioner", "health", "gc")),
        60,
    )
    w.recovered.append(f"all services ready +{took:.1f}s")
    fleet.wait(
        "the outbox's backlog of the outage published",
        lambda: not fleet.outbox.holds_up_to(mark),
        SETTLE,
    )
    w.recovered.append(f"outage backlog published +{time.monotonic() - back:.1f}s")


def _redis_restart(fleet: Fleet, w: Window, plan: HeavyPlan) -> None:
    # The heavy load's own leases are data enough for Redis to take a moment to load.
    redis_restart(persist=True, junk=False)(fleet, w, plan)


HEAVY_INJECT: dict[str, HeavyInject] = {
    "nats down (heavy)": nats_frozen,
    "redis restart (AOF) (heavy)": _redis_restart,
}
