"""The fault suite (issue 9): every service killed -9, NATS down, Redis restarted with and
without persistence, under a grant/release load, audited after each fault.

`make test` runs the short subset; `make test-faults` (PROXYFLEET_FAULTS=full) the whole
suite with a 30 s NATS outage, then the rows of issue 25, each on a fleet of its own: on
a three-server NATS cluster (the stream leader killed, no quorum), on Redis behind Sentinel
(the primary killed) and under wrk at 64 connections (the heavy rows). Each prints the
table docs/reliability.md records."""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.faults.audit import Finding
from tests.faults.cluster_scenarios import CLUSTER, INJECT_CLUSTER, NODES
from tests.faults.harness import Fleet
from tests.faults.heavy_scenarios import HEAVY, HEAVY_PROXIES, run_heavy
from tests.faults.report import Row, failures, render, render_heavy
from tests.faults.scenarios import FULL, SUBSET, Inject, Plan, run
from tests.faults.sentinel_scenarios import INJECT_SENTINEL, SENTINEL

from proxyfleet.bench.wrkrun import WRK_MISSING

FULL_RUN = os.environ.get("PROXYFLEET_FAULTS") == "full"
REPORT = os.environ.get("PROXYFLEET_FAULTS_REPORT", "")
"""Also write the table to this file (make test-faults: .dev/faults-report.md)."""


@contextmanager
def _started(f: Fleet) -> Iterator[Fleet]:
    """A started fleet, closed (its log tails printed) whatever the test did."""
    try:
        f.start()
        yield f
    finally:
        _tail_logs(f.base)
        f.close()


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    with _started(Fleet(proxies=10)) as f:
        yield f


@pytest.mark.timeout(1800 if FULL_RUN else 420)
def test_faults(fleet: Fleet) -> None:
    plan = FULL if FULL_RUN else SUBSET
    t0 = time.monotonic()
    seen: set[Finding] = set()
    rows = run(fleet, plan, seen)
    # A secret logged late (after the credentials row) is still a finding.
    late = [Finding("secret_in_log", s) for s in fleet.logs_with(fleet.secrets())]
    rows[-1].verdict.findings += [f for f in late if f not in seen]
    _report(rows, "", f"{'full' if FULL_RUN else 'subset'}", t0)


@dataclass(frozen=True)
class Topology:
    """Where rows of issue 25 run: the fleet's stores and the faults injected there."""

    stores: dict[str, Any]
    """Fleet arguments beyond the proxies (nats_nodes, sentinel)."""
    plan: Plan
    injects: Mapping[str, Inject]
    what: str
    """The report's words for it."""


TOPOLOGIES = {
    "cluster": Topology(
        {"nats_nodes": NODES},
        CLUSTER,
        INJECT_CLUSTER,
        f"NATS cluster ({NODES} servers, streams with {NODES} replicas)",
    ),
    "sentinel": Topology(
        {"sentinel": True},
        SENTINEL,
        INJECT_SENTINEL,
        "Redis behind Sentinel (a primary, 2 replicas, wait 1)",
    ),
}


@pytest.mark.skipif(not FULL_RUN, reason="make test-faults only (PROXYFLEET_FAULTS=full)")
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(TOPOLOGIES))
def test_faults_on(name: str) -> None:
    topology = TOPOLOGIES[name]
    with _started(Fleet(proxies=10, **topology.stores)) as fleet:
        t0 = time.monotonic()
        rows = run(fleet, topology.plan, set(), topology.injects)
        _report(rows, name, topology.what, t0)


@pytest.fixture
def heavy_fleet() -> Iterator[Fleet]:
    # Cooldown 0: a released proxy is grantable at once, as in the bench's cycles. A probe
    # every 2 s keeps health's share of the two cores small (grants take a proxy probed
    # within 8 s).
    with _started(Fleet(proxies=HEAVY_PROXIES, cooldown=0.0, health_interval=2.0)) as f:
        yield f


@pytest.mark.skipif(not FULL_RUN, reason="make test-faults only (PROXYFLEET_FAULTS=full)")
@pytest.mark.skipif(shutil.which("wrk") is None, reason=WRK_MISSING)
@pytest.mark.timeout(600)
def test_faults_heavy(heavy_fleet: Fleet) -> None:
    t0 = time.monotonic()
    rows = run_heavy(heavy_fleet, HEAVY, set())
    what = f"heavy load (wrk, 64 connections, {HEAVY_PROXIES} proxies, cooldown 0)"
    _report(rows, "heavy", what, t0, table=render_heavy(rows))


def _report(rows: Sequence[Row], suffix: str, what: str, t0: float, table: str = "") -> None:
    """Print the rows' table (and write it to REPORT, or beside it as `-<suffix>.md`); fail
    on any row that lost or broke something."""
    table = table or render(list(rows))
    head = (
        f"fault suite, {what}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"{platform.machine()}, {time.monotonic() - t0:.0f}s"
    )
    print(f"\n{head}\n\n{table}\n")
    if REPORT:
        path = Path(REPORT)
        if suffix:
            path = path.with_name(f"{path.stem}-{suffix}.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{head}\n\n{table}\n\n{failures(rows, examples=5)}\n")
    assert all(r.passed for r in rows), f"{suffix or 'faults'} that lost or broke something:\n" + (
        failures(rows)
    )


def _tail_logs(base: Path) -> None:
    for log in sorted((base / "logs").glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-5:]
        print(f"---- {log.name} (last lines)\n" + "\n".join(tail))
