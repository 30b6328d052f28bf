"""The pool controller's Prometheus metrics (each pool's figures as its status has them)."""

from __future__ import annotations

import contextlib

from prometheus_client import Counter, Gauge, Histogram

from proxyfleet.common.domain.pool_spec import PoolStatus

POOL_MEMBERS = Gauge(
    "proxyfleet_pool_members",
    "A pool's members by state: desired (its size now), ready, leased, free, starting, "
    "unhealthy, draining, quarantined, surge.",
    ["pool", "state"],
)
POOL_OLDEST_AGE = Gauge(
    "proxyfleet_pool_oldest_member_age_seconds",
    "Age of the pool's oldest member in rotation.",
    ["pool"],
)
POOL_ACTIONS = Counter(
    "proxyfleet_pool_actions_total",
    "What the controller did to members: created, drained, deleted, quarantined; `reason` "
    "says why (replace, recycled, scaled down, unhealthy, drained, pool deleted, ...).",
    ["pool", "action", "reason"],
)
POOL_SCALINGS = Counter(
    "proxyfleet_pool_scaling_decisions_total",
    "Autoscale decisions by direction (scale_up, scale_down).",
    ["pool", "direction"],
)
PASS_SECONDS = Histogram(
    "proxyfleet_pool_pass_seconds",
    "Seconds one pass over one pool took (reading its members, planning, acting).",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
POOLS_HELD = Gauge("proxyfleet_pools_held", "Pools whose passes this replica runs now.")

_STATES = ("desired", "ready", "leased", "free", "starting", "unhealthy", "draining",
           "quarantined", "surge")  # fmt: skip


def record(pool: str, status: PoolStatus) -> None:
    for state in _STATES:
        POOL_MEMBERS.labels(pool, state).set(getattr(status, state))
    POOL_OLDEST_AGE.labels(pool).set(status.oldest_age)


def forget(pool: str) -> None:
    """A pool gone, or held by another replica now: its series stop here."""
    for state in _STATES:
        with contextlib.suppress(KeyError):
            POOL_MEMBERS.remove(pool, state)
    with contextlib.suppress(KeyError):
        POOL_OLDEST_AGE.remove(pool)
