"""Events: facts anyone may subscribe to (on `proxyfleet.events.<type>`), written to the
outbox by the store's scripts (store/prelude.py gives them this envelope). No I/O here."""

from __future__ import annotations

import enum

import msgspec

from proxyfleet.common.wire.models import LeaseOutcome, Phase

SCHEMA_VERSION = 1


class EventType(enum.StrEnum):
    """Every event's `type`; its subject is `proxyfleet.events.<type>`."""

    PROXY_PENDING = "proxy.pending"
    PROXY_PROVISIONING = "proxy.provisioning"
    PROXY_BOOTING = "proxy.booting"
    PROXY_READY = "proxy.ready"
    PROXY_UNHEALTHY = "proxy.unhealthy"
    PROXY_DELETING = "proxy.deleting"
    PROXY_DELETED = "proxy.deleted"
    PROXY_FAILED = "proxy.failed"
    PROXY_ADOPTED = "proxy.adopted"
    """A resource that outlived its registry entry (a store reset) registered again."""
    PROXY_EGRESS_CHANGED = "proxy.egress_changed"
    """Its exit address changed (`egress_ip`, `from_egress_ip`), once confirmed."""
    PROXY_EGRESS_SHARED = "proxy.egress_shared"
    """Its exit address is also another proxy's (`egress_ip`, `shared_with`)."""
    LEASE_GRANTED = "lease.granted"
    LEASE_RENEWED = "lease.renewed"
    LEASE_REPORTED = "lease.reported"
    LEASE_RELEASED = "lease.released"
    LEASE_EXPIRED = "lease.expired"
    LEASE_REVOKED = "lease.revoked"
    PROXY_DRAINED = "proxy.drained"
    """Taken out of rotation by its pool (`reason`: recycled, scaled down, pool deleted)."""
    PROXY_QUARANTINED = "proxy.quarantined"
    PROXY_UNQUARANTINED = "proxy.unquarantined"
    POOL_APPLIED = "pool.applied"
    """A pool declared or its spec changed (`gen`, `owner`)."""
    POOL_SCALED = "pool.scaled"
    """Its desired size changed (`size`, `from_size`, `reason`)."""
    POOL_RECYCLING = "pool.recycling"
    """Members passed max_age: a recycle began (`reason`)."""
    POOL_CONDITION = "pool.condition"
    """A condition of its status changed (`condition`, `status`, `reason`, `message`)."""
    POOL_DELETING = "pool.deleting"
    POOL_DELETED = "pool.deleted"
    SOURCE_ENTRY_REJECTED = "source.entry_rejected"
    """A line of a static provider's source is no proxy (`source`, `line`, `reason`; never
    the line's text: it may hold credentials). The source's good lines still apply."""
    SOURCE_LOAD_FAILED = "source.load_failed"
    """A static provider's source could not be loaded, or its load was held by the empty
    guard (`source`, `reason`); the last load is kept."""

    @classmethod
    def of_phase(cls, phase: Phase) -> EventType:
        return cls(f"proxy.{phase.value}")


class EventData(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What an event says besides its envelope; only the fields of its kind are present.

    proxy.*: `from` (previous phase, "" for pending), `gen`, `reason` (failed, unhealthy);
    `zone` and `from_zone` when the transition moved the proxy to another zone (booting
    after a create that failed over).
    lease.*: `epoch`, `client` (the owner: the granting token's name, never its secret),
    `by` (the token that made the call, the owner's or an admin's; absent for an expiry or
    a revocation); granted: `holder`, `target`, `expires_at`; renewed: `expires_at`;
    reported: `outcome`, `target`; revoked: `reason`; released by the gateway: `bytes_up`,
    `bytes_down` (what it relayed on the lease).
    proxy.drained, proxy.quarantined: `reason` (and `by` when an admin acted);
    proxy.egress_changed: `egress_ip`, `from_egress_ip`; proxy.egress_shared: `egress_ip`,
    `shared_with` (the other proxies' ids, at most a few); lease.granted: `egress_ip` when
    its proxy's address is known;
    pool.*: see EventType.
    source.*: `source` (the source's key: `sources[<i>]`, its name, `api`), `line` (1-based;
    for `api` the entry's id is in `reason`), `reason`.
    """

    from_: str | None = msgspec.field(default=None, name="from")
    gen: int | None = None
    reason: str | None = None
    zone: str | None = None
    from_zone: str | None = None
    epoch: int | None = None
    holder: str | None = None
    target: str | None = None
    expires_at: float | None = None
    outcome: LeaseOutcome | None = None
    client: str | None = None
    by: str | None = None
    size: int | None = None
    from_size: int | None = None
    owner: str | None = None
    condition: str | None = None
    status: bool | None = None
    message: str | None = None
    keep_proxies: bool | None = None
    egress_ip: str | None = None
    from_egress_ip: str | None = None
    shared_with: list[str] | None = None
    source: str | None = None
    line: int | None = None
    bytes_up: int | None = None
    bytes_down: int | None = None


# The docstring is the AsyncAPI document's: the Lua `event` writes it with `event_json`,
# which store/prelude.py generates from this Struct.
class Event(msgspec.Struct, kw_only=True):
    """Envelope of every lifecycle and lease event (built by the store's Lua scripts in
    the same shape: store/lua/_lib.lua `event`)."""

    type: EventType
    id: str
    time: float
    proxy_id: str
    schema_version: int = SCHEMA_VERSION
    lease_id: str = ""
    provider: str = ""
    pool: str = ""
    """The pool it concerns: on pool.* events, and on proxy.pending, proxy.adopted,
    proxy.drained, proxy.quarantined and proxy.unquarantined of a member."""
    data: EventData = msgspec.field(default_factory=EventData)
