"""A pool's conditions (as Kubernetes resources carry them): each one's status from this
pass, and `since` kept from the last status while it does not change. Pure."""

from __future__ import annotations

from proxyfleet.common.domain.pool_spec import Condition, PoolStatus
from proxyfleet.pools.view import PoolView

READY = "Ready"
"""True while the ready members in rotation are at least the desired size."""
PROGRESSING = "Progressing"
"""True while members are starting, draining or due for recycling."""
RECYCLING = "Recycling"
"""True while members are past max_age."""
CAPACITY = "CapacityExceeded"
"""True while creates are wanted that no provider can take (full, or failing)."""


def evaluate(
    view: PoolView, status: PoolStatus, *, short: int, blocked_by: str, old: int
) -> tuple[list[Condition], list[Condition]]:
    """This pass's conditions, and those whose status differs from the last pass's."""
    ready_msg = f"{status.ready} of {status.desired} ready"
    now = [
        Condition(
            type=READY, status=status.ready >= status.desired,
            reason="Full" if status.ready >= status.desired else "Short", message=ready_msg,
        ),
        Condition(
            type=PROGRESSING, status=bool(status.starting or status.draining or old),
            reason="Changing" if status.starting or status.draining or old else "Steady",
            message=f"{status.starting} starting, {status.draining} draining, {old} past max_age",
        ),
        Condition(
            type=RECYCLING, status=old > 0, reason="MaxAge" if old else "Fresh",
            message=f"{old} members past max_age" if old else "",
        ),
        Condition(
            type=CAPACITY, status=short > 0, reason="NoRoom" if short else "Room",
            message=f"{short} members could not be created: {blocked_by}" if short else "",
        ),
    ]  # fmt: skip
    before = {c.type: c for c in (view.previous.conditions if view.previous else [])}
    changed = []
    for c in now:
        prior = before.get(c.type)
        if prior is not None and prior.status == c.status:
            c.since = prior.since
            continue
        c.since = view.now
        # A pool's first pass reports only what is wrong from the start.
        if prior is not None or (c.status and c.type in _FIRST_NEWS):
            changed.append(c)
    return now, changed


_FIRST_NEWS = frozenset({RECYCLING, CAPACITY})
