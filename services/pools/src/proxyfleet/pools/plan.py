"""One pass over one pool, as a pure function: compare what it declares with its members
and say what to do (create, drain, delete, quarantine, scale) and what its status is.
The controller (`controller`) reads the view and carries the plan out; it decides nothing.

Rules, in the order they apply:
- A pool being deleted retires every member: an unleased one is deleted, a leased one
  drained (deleted once free, or past drain_timeout with its lease revoked).
- Quarantine (the spec's rule) takes a member that too many targets blocked out of
  rotation for good; a member unhealthy past replace_unhealthy_after is deleted. Both are
  replaced, like a member that failed or was deleted.
- Replacement: members in rotation are brought back to the desired size.
- Recycle: a member older than max_age (less up to 10 %, by its id, so a batch made
  together ages over a span) is replaced first: up to max_surge extra members exist at a
  time (draining ones count), and an old member is drained only while the ready members
  left stay at or above desired - max_unavailable.
- Scale down: members beyond the desired size are retired, those not ready first, then
  free ones, never a leased one (it is drained).
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable

from proxyfleet.common.domain.pool_spec import AutoscaleInputs, PoolSpec, PoolStatus
from proxyfleet.common.wire.models import Phase, Withheld
from proxyfleet.pools import conditions
from proxyfleet.pools.autoscale import scale
from proxyfleet.pools.spread import place
from proxyfleet.pools.view import GONE, STARTING, Delete, Drain, Member, Plan, PoolView, Quarantine

AGE_SPREAD = 0.1
"""Share of max_age over which members made together become due for recycling."""


def age_limit(spec: PoolSpec, member_id: str) -> float | None:
    """When `member_id` is old enough to recycle: max_age, less up to AGE_SPREAD of it."""
    if spec.max_age is None:
        return None
    spread = (zlib.crc32(member_id.encode()) % 1000) / 1000
    return spec.max_age * (1 - AGE_SPREAD * spread)


def plan(view: PoolView) -> Plan:
    spec, now = view.spec, view.now
    live = [m for m in view.members if m.phase not in GONE]
    draining = [m for m in live if m.withheld is Withheld.DRAINING]
    quarantined = [m for m in live if m.withheld is Withheld.QUARANTINED]
    active = [m for m in live if m.withheld is Withheld.NO]
    out = Plan(desired=view.desired, status=PoolStatus(desired=view.desired))
    out.deletes += _drained_and_done(draining, spec, now)
    if view.deleting:
        for m in [*active, *quarantined]:
            _retire(out, m, "pool deleted")
        out.remove = not view.members
        out.status = _status(view, out.desired, active, draining, quarantined)
        return out
    active, set_aside = _set_aside(out, active, spec, now)
    quarantined += set_aside
    inputs = _autoscale(out, view, active)
    old: list[Member] = []
    fresh: list[Member] = []
    for m in active:  # one pass: a pool of thousands may have thousands past max_age
        (old if _is_old(spec, m, now) else fresh).append(m)
    surge_room = out.desired + spec.max_surge - len(active) - len(draining)
    wanted = max(out.desired - len(active), min(out.desired - len(fresh), surge_room), 0)
    placed = place(wanted, view.providers, active, now)
    out.creates = placed.creates
    if out.desired - len(active) < len(out.creates):
        out.create_reason = "recycle"
    _recycle(out, old, active, spec)
    _scale_down(out, fresh, len(fresh) - out.desired, now)
    out.status = _status(view, out.desired, active, draining, quarantined)
    out.status.autoscale = inputs
    # The last decision stays in the status until the next one (a step is rare).
    before = view.previous.last_decision if view.previous else None
    out.status.last_decision = out.scaled or before
    out.status.conditions, out.changed = conditions.evaluate(
        view, out.status, short=placed.short, blocked_by=placed.blocked_by, old=len(old)
    )
    if any(c.type == conditions.RECYCLING and c.status for c in out.changed):
        out.recycling_began = f"{len(old)} members past max_age {spec.max_age:g} s"
    return out


def _is_old(spec: PoolSpec, m: Member, now: float) -> bool:
    limit = age_limit(spec, m.id)
    return limit is not None and now - m.created_at >= limit


def _drained_and_done(draining: Iterable[Member], spec: PoolSpec, now: float) -> list[Delete]:
    """A draining member goes once no lease holds it, or past drain_timeout regardless."""
    out = []
    for m in draining:
        if not m.leased:
            out.append(Delete(m.id, "drained"))
        elif now - m.withheld_at >= spec.drain_timeout:
            out.append(Delete(m.id, f"drain timeout {spec.drain_timeout:g} s", leased=True))
    return out


def _retire(out: Plan, m: Member, reason: str) -> None:
    """Out of the pool: deleted now when nothing holds it, else drained first."""
    if m.leased and m.phase is Phase.READY:
        out.drains.append(Drain(m.id, reason))
    else:
        out.deletes.append(Delete(m.id, reason, leased=m.leased))


def _set_aside(
    out: Plan, active: list[Member], spec: PoolSpec, now: float
) -> tuple[list[Member], list[Member]]:
    """Quarantine members too many targets blocked; delete those unhealthy too long.
    Returns the members left in rotation and those quarantined now."""
    kept, quarantined = [], []
    rule = spec.quarantine
    for m in active:
        if rule is not None and len(m.blocked_by) >= rule.blocked_targets:
            targets = ", ".join(sorted(m.blocked_by)[:5])
            why = f"blocked by {len(m.blocked_by)} targets within {rule.within:g} s: {targets}"
            out.quarantines.append(Quarantine(m.id, why))
            quarantined.append(m)
        elif m.phase is Phase.UNHEALTHY and now - m.updated_at >= spec.replace_unhealthy_after:
            reason = f"unhealthy for {spec.replace_unhealthy_after:g} s"
            out.deletes.append(Delete(m.id, reason, leased=m.leased))
        else:
            kept.append(m)
    return kept, quarantined


def _autoscale(out: Plan, view: PoolView, active: list[Member]) -> AutoscaleInputs | None:
    a = view.spec.autoscale
    if a is None:
        out.desired = view.spec.start_size()
        return None
    free = sum(1 for m in active if m.free(view.now))
    starting = sum(1 for m in active if m.phase in STARTING)
    s = scale(
        a, view.desired, free=free, starting=starting, refused=view.refused,
        low_since=view.low_since, high_since=view.high_since, now=view.now,
    )  # fmt: skip
    out.desired, out.scaled = s.desired, s.decision
    out.low_since, out.high_since = s.inputs.low_since, s.inputs.high_since
    return s.inputs


def _recycle(out: Plan, old: list[Member], active: list[Member], spec: PoolSpec) -> None:
    """Drain old members, free ones first then the oldest, while enough stay ready."""
    ready = sum(1 for m in active if m.phase is Phase.READY)
    floor = out.desired - spec.max_unavailable
    for m in sorted(old, key=lambda m: (m.leased, m.created_at)):
        if m.phase is not Phase.READY:
            _retire(out, m, "recycled")  # not serving: nothing to keep up
        elif ready - 1 >= floor:
            _retire(out, m, "recycled")
            ready -= 1


def _scale_down(out: Plan, fresh: list[Member], excess: int, now: float) -> None:
    if excess <= 0:
        return

    def keep_first(m: Member) -> tuple[bool, bool, bool, float]:
        """Not ready first, then free, then unleased, oldest first."""
        return (m.phase is Phase.READY, not m.free(now), m.leased, m.created_at)

    order = sorted(fresh, key=keep_first)
    for m in order[:excess]:
        _retire(out, m, "scaled down")


def _status(
    view: PoolView,
    desired: int,
    active: list[Member],
    draining: list[Member],
    quarantined: list[Member],
) -> PoolStatus:
    now = view.now
    ready = [m for m in active if m.phase is Phase.READY]
    return PoolStatus(
        desired=desired,
        ready=len(ready),
        leased=sum(1 for m in [*active, *draining] if m.leased),
        free=sum(1 for m in active if m.free(now)),
        starting=sum(1 for m in active if m.phase in STARTING),
        unhealthy=sum(1 for m in active if m.phase is Phase.UNHEALTHY),
        draining=len(draining),
        quarantined=len(quarantined),
        surge=max(0, len(active) + len(draining) - desired),
        oldest_age=max((now - m.created_at for m in active), default=0.0),
        by_provider=dict(Counter(m.provider for m in active)),
        by_zone=dict(Counter(m.zone for m in active)),
        observed_gen=view.gen,
        updated_at=now,
    )
