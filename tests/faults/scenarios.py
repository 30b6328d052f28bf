"""The faults, each injected under the grant/release load and audited afterwards."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tests.faults import checks
from tests.faults.audit import Finding, Request, load_figures
from tests.faults.harness import Fleet
from tests.faults.load import Load
from tests.faults.outbox import SETTLE
from tests.faults.report import Row
from tests.faults.verdicts import audit_recorded, audit_window


@dataclass
class Plan:
    nats_outage: float
    warm: float
    after: float
    two_api_seconds: float
    faults: list[str]


SUBSET = Plan(
    nats_outage=5,
    warm=2,
    after=2,
    two_api_seconds=0,
    faults=[
        "kill -9 api",
        "kill -9 provisioner",
        "nats down",
        "client isolation",
        "credentials and logs",
        "redis restart (AOF)",
        "redis reset (no persistence)",
    ],
)
FULL = Plan(
    nats_outage=30,
    warm=5,
    after=5,
    two_api_seconds=40,
    faults=[
        "kill -9 api",
        "kill -9 provisioner",
        "kill -9 health",
        "kill -9 gc",
        "nats down",
        "two APIs",
        "dead proxy",
        "client isolation",
        "credentials and logs",
        "config and limits",
        "redis restart (AOF)",
        "redis reset (no persistence)",
    ],
)


@dataclass
class Window:
    """What one fault did, for its audit."""

    start: float = 0.0
    end: float = 0.0
    recovered: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)
    writes: list[Request] = field(default_factory=list)
    redis_reset_at: float | None = None
    dead: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Proxies killed while health was down: (from, to) in which none may be granted."""
    apis: list[str] = field(default_factory=list)
    clients: int = 4
    load: bool = True
    killed_at: float | None = None
    """When a fault killed the store (time.time()): the row gives the first grant after."""


Inject = Callable[[Fleet, Window, Plan], None]


def run(
    fleet: Fleet, plan: Plan, seen: set[Finding], injects: Mapping[str, Inject] | None = None
) -> list[Row]:
    """Each of the plan's faults as a row, injected as `injects` (INJECT by default) says."""
    table = INJECT if injects is None else injects
    return [run_one(fleet, name, table[name], plan, seen) for name in plan.faults]


def run_one(fleet: Fleet, name: str, inject: Inject, plan: Plan, seen: set[Finding]) -> Row:
    w = Window(apis=[fleet.stack.api_url])
    before = fleet.resources()
    if name == "two APIs":
        w.apis.append(fleet.start_second_api())
        w.clients = 6
    load = Load(w.apis, fleet.stack.client_token, clients=w.clients)
    if name in ("credentials and logs", "config and limits", "client isolation"):
        load.clients = 0  # checks without load: they measure no throughput
    with load:
        time.sleep(plan.warm if load.clients else 0)
        w.start = time.time()
        try:
            inject(fleet, w, plan)
        except AssertionError as exc:  # a bounded wait ran out: that is the finding
            w.findings.append(Finding("not_recovered", str(exc)))
        w.end = time.time()
        time.sleep(plan.after if load.clients else 0)
    if load.clients:
        w.recovered.append(grants_refused(load.requests, w.start))
        if w.killed_at is not None:
            w.recovered.append(first_grant_after(load.requests, w.killed_at))
    fleet.passwords |= load.passwords
    if "api2" in fleet.stack.processes:
        fleet.stop_service("api2")
    verdict, events = audit_window(fleet, w, load.leases, load.requests, before, plan.warm)
    audit_recorded(verdict, load.leases, events, w, seen)
    rps, errors, statuses = load_figures(load.requests, w.start, max(w.end, w.start + 1))
    if name == "two APIs":
        w.recovered.append(f"{len(load.leases)} grant/release cycles over 2 APIs")
    return Row(name, rps, errors, w.recovered, verdict, len(load.leases), len(events), statuses)


# ---- the faults ----------------------------------------------------------------------------


def grants_refused(requests: list[Request], start: float) -> str:
    """How long grants went unanswered or refused from the first failure after `start`."""
    grants = sorted((r for r in requests if r.op == "grant" and r.started >= start),
                    key=lambda r: r.started)  # fmt: skip
    if grants and not any(r.status == 201 for r in grants):
        return "no grant succeeded"
    # A 503 `unavailable` is a full pool (every proxy leased or cooling down), not a fault.
    failed = next((r for r in grants if r.status != 201 and r.code != "unavailable"), None)
    if failed is None:
        return "no grant failed"
    ok = next((r for r in grants if r.started > failed.started and r.status == 201), None)
    if ok is None:
        return "grants never recovered"
    return (
        f"grants 2xx again {ok.started + ok.seconds - failed.started:.1f}s after the first failure"
    )


def first_grant_after(requests: list[Request], killed_at: float) -> str:
    """Seconds from the kill to the first 2xx answer to a grant asked after it."""
    done = [r.started + r.seconds for r in requests
            if r.op == "grant" and r.status == 201 and r.started >= killed_at]  # fmt: skip
    if not done:
        return "no grant after the kill"
    return f"first grant 2xx {min(done) - killed_at:.1f}s after the kill"


def kill(service: str) -> Inject:
    def inject(fleet: Fleet, w: Window, plan: Plan) -> None:
        fresh: list[str] = []
        if service == "provisioner":  # mid-create: the issue lost provisioning/booting events
            r = fleet.admin.post("/v1/proxies", json={"provider": "local", "count": 3})
            fresh = [p["id"] for p in r.json()["items"]]
            fleet.wait(
                "a create in progress",
                lambda: any(fleet.registry().get(i, {}).get("phase") != "pending" for i in fresh),
                10,
            )
        killed = time.time()
        fleet.kill9(service)
        time.sleep(1.0)  # a supervisor's restart delay
        restarted = time.monotonic()
        fleet.restart(service)
        fleet.wait(f"{service} ready", lambda: fleet.is_ready(service), 60)
        w.recovered.append(f"{service} ready {time.monotonic() - restarted:.1f}s after restart")
        if fresh:
            took = fleet.wait(
                "the proxies created across the kill ready",
                lambda: all(fleet.registry().get(i, {}).get("phase") == "ready" for i in fresh),
                60,
            )
            w.recovered.append(f"{len(fresh)} creates across the kill ready +{took:.1f}s")
        w.recovered.append(f"(down {time.time() - killed:.1f}s)")

    return inject


def nats_down(fleet: Fleet, w: Window, plan: Plan) -> None:
    fleet.nats.kill()
    t0 = time.monotonic()
    time.sleep(min(2.0, plan.nats_outage / 2))
    w.writes += checks.timed_writes(fleet, w)
    w.findings += checks.start_without_nats(fleet, plan.nats_outage - (time.monotonic() - t0))
    time.sleep(max(0.0, plan.nats_outage - (time.monotonic() - t0)))
    fleet.nats.start()
    back = time.monotonic()
    w.recovered.append(f"NATS down {back - t0:.0f}s")
    took = fleet.wait(
        "every service ready after NATS",
        lambda: all(fleet.is_ready(s) for s in ("api", "provisioner", "health", "gc")),
        60,
    )
    w.recovered.append(f"all services ready +{took:.1f}s")
    took = fleet.wait("the outbox drained", lambda: fleet.outbox.length() == 0, SETTLE)
    w.recovered.append(f"outbox drained +{time.monotonic() - back:.1f}s")


def redis_restart(persist: bool, junk: bool = True) -> Callable[[Fleet, Window, object], None]:
    def inject(fleet: Fleet, w: Window, plan: object) -> None:
        ready_before = fleet.ready_count()
        if persist and junk:
            fleet.redis.fill_junk()  # enough data that loading it takes a moment (LOADING)
        fleet.redis.kill()
        if persist:
            time.sleep(1.0)
        else:
            w.redis_reset_at = time.time()
            fleet.redis.wipe()
            fleet.redis.persist = False  # the dev stack's old settings: nothing kept
        t0 = time.monotonic()
        fleet.redis.start()
        w.recovered.append(f"Redis loaded its data in {fleet.redis.loading_seconds():.1f}s")
        fleet.wait("the API ready after Redis", lambda: fleet.is_ready("api"), 60)
        w.recovered.append(f"API ready {time.monotonic() - t0:.1f}s after Redis restart")
        if persist:
            took = fleet.wait(
                "every proxy ready again", lambda: fleet.ready_count() >= ready_before, 30
            )
            w.recovered.append(f"{ready_before} proxies ready +{took:.1f}s")
            return
        # The registry must be rebuilt from the provider (re-adoption), and GC must not
        # delete what it no longer finds in Redis: give GC several rounds to try.
        try:
            took = fleet.wait(
                f"the registry rebuilt ({ready_before} ready proxies)",
                lambda: fleet.ready_count() >= ready_before,
                30,
            )
            w.recovered.append(f"registry rebuilt: {ready_before} ready +{took:.1f}s")
        except AssertionError as exc:
            w.findings.append(Finding("registry_not_rebuilt", str(exc)))
            w.recovered.append(f"registry: {fleet.ready_count()}/{ready_before} ready after 30s")
        time.sleep(max(0.0, 8.0 - (time.monotonic() - t0)))

    return inject


INJECT: dict[str, Inject] = {
    "kill -9 api": kill("api"),
    "kill -9 provisioner": kill("provisioner"),
    "kill -9 health": kill("health"),
    "kill -9 gc": kill("gc"),
    "nats down": nats_down,
    "two APIs": lambda fleet, w, plan: time.sleep(plan.two_api_seconds),
    "dead proxy": checks.dead_proxy,
    "client isolation": checks.client_isolation,
    "credentials and logs": checks.credentials_and_logs,
    "config and limits": checks.config_and_limits,
    "redis restart (AOF)": redis_restart(persist=True),
    "redis reset (no persistence)": redis_restart(persist=False),
}
