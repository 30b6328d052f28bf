"""The fault suite's audit: pure functions over what the clients recorded, what the event
stream holds and which resources the provider has. No I/O, so each check is tested with
hand-made histories (tests/faults/test_audit.py), including ones that must fail."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

ENDED = frozenset({"released", "expired", "revoked"})
LEASE_END_EVENTS = frozenset({"lease.released", "lease.expired", "lease.revoked"})


@dataclass(frozen=True)
class Lease:
    """One 2xx grant as its client saw it (client clock = server clock: one machine)."""

    lease_id: str
    proxy_id: str
    epoch: int
    granted_at: float
    """When the 201 arrived: the client holds the proxy from here."""
    expires_at: float
    release_sent: float | None = None
    """When the client sent its (last) release: it stops using the proxy here."""
    release_status: int | None = None
    """200 released, 409/404 already ended, 0 no answer, None never sent."""


@dataclass(frozen=True)
class Request:
    op: str
    """grant, release, create, delete."""
    started: float
    seconds: float
    status: int
    """HTTP status, 0 when no answer came (refused, reset, timed out)."""
    code: str = ""
    """The error body's `error` (store_unavailable, conflict, ...) when not 2xx."""

    @property
    def label(self) -> str:
        return f"{self.status} {self.code}".strip() if self.status else "no answer"


@dataclass(frozen=True)
class StreamEvent:
    id: str
    type: str
    time: float
    proxy_id: str
    lease_id: str = ""
    epoch: int | None = None
    gen: int | None = None
    expires_at: float | None = None
    """A lease.granted's expiry: the latest its holder may use the proxy without a renew."""


@dataclass(frozen=True)
class Finding:
    check: str
    detail: str


@dataclass
class Verdict:
    findings: list[Finding] = field(default_factory=list)
    lost_with_redis: int = 0
    """2xx leases gone with an unpersisted Redis: accounted, not a finding."""
    events_lost_with_redis: int = 0
    """Lease events still in the outbox of an unpersisted Redis when it was reset."""

    def by_check(self) -> dict[str, int]:
        return dict(Counter(f.check for f in self.findings))


# ---- leases -------------------------------------------------------------------------------


def check_leases(
    leases: Iterable[Lease],
    observed: Mapping[str, str | None],
    now: float,
    redis_reset_at: float | None = None,
    expiry_slack: float = 5.0,
) -> Verdict:
    """Every 2xx lease is still known and in its final state. `observed` maps lease id to
    the state GET answered (None: 404). A lease granted before a reset of an unpersisted
    Redis may be gone: that is counted as lost with Redis, never silently."""
    v = Verdict()
    for lease in leases:
        state = observed.get(lease.lease_id)
        if state is None:
            if redis_reset_at is not None and lease.granted_at <= redis_reset_at:
                v.lost_with_redis += 1
            else:
                v.findings.append(Finding("lease_lost", f"{lease.lease_id}: 404 after a 2xx"))
            continue
        if lease.release_status == 200 and state != "released":
            v.findings.append(
                Finding("lease_state", f"{lease.lease_id}: released (200) but {state}")
            )
        elif state == "active" and now > lease.expires_at + expiry_slack:
            v.findings.append(
                Finding("lease_state", f"{lease.lease_id}: still active past its expiry")
            )
        elif state not in ENDED and state != "active":
            v.findings.append(Finding("lease_state", f"{lease.lease_id}: state {state!r}"))
    return v


def hold_interval(lease: Lease) -> tuple[float, float]:
    """From the 201 to the moment the client let go (sent its release), else its expiry.
    The server applies a release after it is sent and a grant before its 201 arrives, so
    two such intervals on one proxy overlapping is a double hold for certain."""
    end = lease.release_sent if lease.release_sent is not None else lease.expires_at
    return lease.granted_at, end


def _overlaps(intervals: dict[str, list[tuple[float, float, str]]]) -> list[Finding]:
    found: list[Finding] = []
    for proxy_id, spans in intervals.items():
        spans.sort()
        # One sweep: every earlier interval still open when the next one starts overlaps it.
        open_until, open_id = -math.inf, ""
        for start, end, lease_id in spans:
            if start < open_until:
                found.append(
                    Finding("double_hold", f"{proxy_id}: {open_id} and {lease_id} overlap")
                )
            if end > open_until:
                open_until, open_id = end, lease_id
    return found


def check_client_holds(leases: Iterable[Lease]) -> list[Finding]:
    """No proxy held by two leases at once, from the clients' own records."""
    spans: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for lease in leases:
        start, end = hold_interval(lease)
        spans[lease.proxy_id].append((start, end, lease.lease_id))
    return _overlaps(spans)


def check_stream_holds(events: Iterable[StreamEvent]) -> list[Finding]:
    """No proxy held by two leases at once, from the stream (granted to ended, server
    times), and every grant of a proxy has a higher epoch than the one before."""
    events = list(events)
    granted: dict[str, StreamEvent] = {}
    ended: dict[str, float] = {}
    for e in events:
        if e.type == "lease.granted":
            granted.setdefault(e.lease_id, e)
        elif e.type in LEASE_END_EVENTS:
            ended[e.lease_id] = min(ended.get(e.lease_id, math.inf), e.time)
    renewed = {e.lease_id for e in events if e.type == "lease.renewed"}
    spans: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for lease_id, g in granted.items():
        # A lease with no end on the stream (lost with an unpersisted Redis) still ends at
        # its expiry unless it was renewed: its holder may not use the proxy past that.
        unended = g.expires_at if g.expires_at is not None and lease_id not in renewed else math.inf
        spans[g.proxy_id].append((g.time, ended.get(lease_id, unended), lease_id))
    found = _overlaps(spans)
    by_proxy: dict[str, list[StreamEvent]] = defaultdict(list)
    for g in granted.values():
        by_proxy[g.proxy_id].append(g)
    for proxy_id, grants in by_proxy.items():
        grants.sort(key=lambda g: g.time)
        top = -1
        for g in grants:
            if g.epoch is not None and g.epoch <= top:
                found.append(Finding("epoch_reused", f"{proxy_id}: epoch {g.epoch} after {top}"))
            top = max(top, g.epoch if g.epoch is not None else top)
    return found


# ---- the event stream ---------------------------------------------------------------------


def check_stream_once(events: Iterable[StreamEvent]) -> list[Finding]:
    counts = Counter(e.id for e in events)
    return [Finding("event_duplicate", f"{i}: {n} times") for i, n in counts.items() if n > 1]


def check_lease_events(
    leases: Iterable[Lease], events: Iterable[StreamEvent], redis_reset_at: float | None = None
) -> tuple[list[Finding], int]:
    """Every 2xx grant has its lease.granted on the stream (same proxy, same epoch), every
    200 release its lease.released. An event of a change made before a reset of an
    unpersisted Redis may have gone with its outbox: counted (second value), not hidden."""
    reset = redis_reset_at if redis_reset_at is not None else -math.inf
    accounted = 0
    granted: dict[str, StreamEvent] = {}
    released: set[str] = set()
    for e in events:
        if e.type == "lease.granted":
            granted[e.lease_id] = e
        elif e.type == "lease.released":
            released.add(e.lease_id)
    found: list[Finding] = []
    for lease in leases:
        g = granted.get(lease.lease_id)
        if g is None and lease.granted_at <= reset:
            accounted += 1
        elif g is None:
            found.append(Finding("event_lost", f"lease.granted of {lease.lease_id}"))
        elif g.proxy_id != lease.proxy_id or g.epoch != lease.epoch:
            found.append(Finding("event_mismatch", f"lease.granted of {lease.lease_id}"))
        if lease.release_status == 200 and lease.lease_id not in released:
            if lease.release_sent is not None and lease.release_sent <= reset:
                accounted += 1
            else:
                found.append(Finding("event_lost", f"lease.released of {lease.lease_id}"))
    return found, accounted


def check_lifecycle(
    events: Iterable[StreamEvent], registry_gens: Mapping[str, int]
) -> list[Finding]:
    """Every transition of every proxy is on the stream: each transition raises the gen by
    one, so a gap, a first event that is not proxy.pending, or a registry gen above the
    last event's means an event written to Redis and never published."""
    gens: dict[str, dict[int, str]] = defaultdict(dict)
    for e in events:
        if e.type.startswith("proxy.") and e.gen is not None:
            gens[e.proxy_id][e.gen] = e.type
    found: list[Finding] = []
    for proxy_id, seen in gens.items():
        first, last = min(seen), max(seen)
        if seen[first] != "proxy.pending":
            found.append(Finding("event_lost", f"{proxy_id}: first event {seen[first]}"))
        missing = [g for g in range(first, last + 1) if g not in seen]
        if missing:
            found.append(Finding("event_lost", f"{proxy_id}: no event for gen {missing}"))
    for proxy_id, gen in registry_gens.items():
        known = gens.get(proxy_id)
        top = max(known) if known else None
        if top is None or gen > top:
            found.append(
                Finding("event_lost", f"{proxy_id}: registry gen {gen}, stream up to {top}")
            )
    return found


# ---- resources, answers -------------------------------------------------------------------


def check_resources(
    before: Mapping[str, int], after: Mapping[str, int], deleted: Iterable[str] = ()
) -> list[Finding]:
    """`before`/`after`: live resources per proxy id. A proxy alive before the fault and
    not deleted on purpose must still be alive; no proxy id may have two resources."""
    gone = set(deleted)
    found = [
        Finding("proxy_destroyed", pid)
        for pid, n in before.items()
        if n > 0 and pid not in gone and after.get(pid, 0) == 0
    ]
    found += [Finding("duplicate_resource", f"{pid}: {n}") for pid, n in after.items() if n > 1]
    return found


def check_dead_grants(
    leases: Iterable[Lease], dead: Mapping[str, tuple[float, float]]
) -> list[Finding]:
    """No grant of a proxy in the span it was known dead and unprobed (`dead`: proxy id ->
    (from, to), e.g. a few probe intervals after its process was killed while health was
    down, until health came back)."""
    return [
        Finding("dead_proxy_granted", f"{x.lease_id} on {x.proxy_id}")
        for x in leases
        if x.proxy_id in dead and dead[x.proxy_id][0] <= x.granted_at <= dead[x.proxy_id][1]
    ]


def check_write_latency(requests: Iterable[Request], limit: float) -> list[Finding]:
    """Creates and deletes answer 2xx within `limit` seconds (during a NATS outage too)."""
    return [
        Finding("slow_write", f"{r.op}: {r.status} after {r.seconds:.1f}s")
        for r in requests
        if r.op in ("create", "delete") and (not 200 <= r.status < 300 or r.seconds > limit)
    ]


def check_no_server_errors(requests: Iterable[Request]) -> list[Finding]:
    """An outage is a 503 with Retry-After, never a 500."""
    counts = Counter(f"{r.op} {r.status}" for r in requests if r.status >= 500 and r.status != 503)
    return [Finding("server_error", f"{what} x{n}") for what, n in sorted(counts.items())]


def load_figures(
    requests: Iterable[Request], start: float, end: float
) -> tuple[float, float, dict[str, int]]:
    """Requests/s, the share not answered 2xx and those answers by status and code, for
    the grants and releases started in [start, end)."""
    window = [r for r in requests if start <= r.started < end and r.op in ("grant", "release")]
    if not window or end <= start:
        return 0.0, 0.0, {}
    errors = Counter(r.label for r in window if not 200 <= r.status < 300)
    return len(window) / (end - start), sum(errors.values()) / len(window), dict(errors)
