"""What one pass of the controller sees of a pool, and what it decides to do: plain data,
built by `reader` from Redis and the providers config, turned into actions by `plan`."""

from __future__ import annotations

from dataclasses import dataclass, field

from proxyfleet.common.domain.pool_spec import Condition, Decision, PoolSpec, PoolStatus
from proxyfleet.common.wire.models import Phase, Withheld

STARTING = frozenset({Phase.PENDING, Phase.PROVISIONING, Phase.BOOTING})
GONE = frozenset({Phase.DELETING, Phase.DELETED, Phase.FAILED})
"""Members on their way out whatever the pool does (a failed one's delete is queued)."""


@dataclass(slots=True)  # not frozen: a frozen init costs ~5 us, 10,000 members every pass
class Member:
    """One member as a pass reads it (nothing changes it: `plan` only reads)."""

    id: str
    provider: str
    zone: str
    phase: Phase
    created_at: float
    updated_at: float
    """When it entered its phase."""
    leased: bool
    avail_at: float
    """When its cooldown ends."""
    withheld: Withheld = Withheld.NO
    withheld_at: float = 0.0
    reason: str = ""
    """Why it failed, when it did."""
    blocked_by: frozenset[str] = frozenset()
    """Targets that reported it blocked within the pool's quarantine window."""

    def free(self, now: float) -> bool:
        """Grantable now: ready, in rotation, not leased, not cooling down."""
        return (
            self.phase is Phase.READY
            and self.withheld is Withheld.NO
            and not self.leased
            and self.avail_at <= now
        )


@dataclass(frozen=True, slots=True)
class ProviderRoom:
    """One of the pool's providers as this pass sees it."""

    name: str
    weight: int
    zones: tuple[str, ...]
    """The pool's zones this provider serves, in the pool's order."""
    room: int | None = None
    """Proxies it may still take under its max_proxies (None: no limit)."""
    max_proxies: int | None = None
    failing_until: float = 0.0
    """Creates paused until then: its recent creates failed (ProviderRoom.failing_reason)."""
    failing_reason: str = ""
    listed: bool = True
    """Its provisioner has listed its resources since the store began: before that (a new
    store, or one reset), members that outlived a reset may still be re-adopted, and a
    create would fill their place twice."""


@dataclass(frozen=True, slots=True)
class PoolView:
    name: str
    spec: PoolSpec
    gen: int
    desired: int
    """The desired size stored (the spec's, or autoscale's latest)."""
    deleting: bool
    members: list[Member]
    providers: list[ProviderRoom]
    now: float
    refused: int = 0
    """Grants for the pool refused since the last pass."""
    low_since: float = 0.0
    high_since: float = 0.0
    previous: PoolStatus | None = None


@dataclass(frozen=True, slots=True)
class Create:
    provider: str
    zone: str


@dataclass(frozen=True, slots=True)
class Drain:
    """Out of rotation; its lease runs on, then it is deleted."""

    proxy_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Delete:
    proxy_id: str
    reason: str
    leased: bool = False
    """Deleted whatever holds it (its lease is revoked with the drain's reason); else only
    while no lease holds it."""


@dataclass(frozen=True, slots=True)
class Quarantine:
    proxy_id: str
    reason: str


@dataclass(slots=True)
class Plan:
    desired: int
    status: PoolStatus
    creates: list[Create] = field(default_factory=list)
    create_reason: str = "replace"
    """replace (members missing from the desired size) or recycle (surge for old ones)."""
    drains: list[Drain] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    quarantines: list[Quarantine] = field(default_factory=list)
    scaled: Decision | None = None
    """Autoscale changed the desired size (pool.scaled)."""
    low_since: float = 0.0
    high_since: float = 0.0
    remove: bool = False
    """Being deleted and no member is left: remove the pool."""
    changed: list[Condition] = field(default_factory=list)
    """Conditions whose status changed this pass (pool.condition)."""
    recycling_began: str = ""
    """Members passed max_age where none had (pool.recycling, with this reason)."""
