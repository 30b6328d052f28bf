"""The sync plan: what the registry must do so that the provider's proxies are what its
sources list. Pure: the caller reads the sources and the registry, and acts.

A proxy the syncer registered carries placement `source` (the source's key), `host` and
`port`; proxies without `source` (a vendor session a pool or the API created) are not
the plan's. Added: new pending external proxies. Dropped by every source: drained
(leases run to their end), then, once no lease holds it, deleted, which forgets it (the
provider's delete touches nothing outside). Kept: state kept; a changed password, labels
or zone updates the proxy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.common.domain.lifecycle import COUNTED
from proxyfleet.common.wire.models import Phase, Proxy, Withheld
from proxyfleet.provisioner_static.pure.lines import ProxyLine

SOURCE = "source"
"""Placement key of the source that lists a proxy."""
GONE = frozenset({Phase.DELETING, Phase.DELETED})


@dataclass(frozen=True, slots=True)
class Desired:
    """One proxy a source lists."""

    id: str
    source: str
    line: ProxyLine
    zone: str
    labels: Mapping[str, str] = field(default_factory=dict)
    name: str = ""

    def placement(self) -> dict[str, str]:
        where = {SOURCE: self.source, "host": self.line.host, "port": str(self.line.port)}
        return {**where, "name": self.name} if self.name else where


@dataclass(frozen=True, slots=True)
class SourceLoad:
    key: str
    entries: Sequence[Desired] | None
    """None: not known yet (never loaded since the start): its proxies are left as they are."""
    guarded: bool = False
    """A file or URL: the empty guard applies to its loads."""


@dataclass(frozen=True, slots=True)
class Held:
    """A load the empty guard refused: it would have removed `removed` of `had` proxies."""

    source: str
    removed: int
    had: int


@dataclass(slots=True)
class Plan:
    add: list[Desired] = field(default_factory=list)
    drain: list[str] = field(default_factory=list)
    """Not listed any more, still in rotation: taken out, its lease runs on."""
    delete: list[str] = field(default_factory=list)
    """Not listed and unleased: forgotten (deleted under an unleased-only check)."""
    update: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    over_max: list[Desired] = field(default_factory=list)
    """Listed, but past max_proxies: not registered."""
    duplicates: list[Desired] = field(default_factory=list)
    """Listed by an earlier source too: that one's kept."""
    stuck: list[Desired] = field(default_factory=list)
    """Listed again while its proxy is draining or being forgotten: a drain is not undone;
    once the proxy is deleted, the create takes over its record (its id is free again)."""


def empty_guard_trips(had: int, removed: int, listed: int, guard: float) -> bool:
    """Whether a load is refused: it lists nothing while `had` proxies were listed, or it
    removes two or more and more than `guard` percent of them. 100: never."""
    if had == 0 or guard >= 100:
        return False
    return listed == 0 or (removed >= 2 and removed * 100 > guard * had)


def plan_sync(
    loads: Sequence[SourceLoad],
    proxies: Sequence[Proxy],
    *,
    max_proxies: int | None,
    empty_guard: float,
) -> Plan:
    """The plan from every source's load (in precedence order) and the registry's proxies
    of this provider (deleted ones left out or not)."""
    out = Plan()
    ours = [p for p in proxies if p.placement.get(SOURCE) and p.phase is not Phase.DELETED]
    by_source: dict[str, list[Proxy]] = {}
    for p in ours:
        by_source.setdefault(p.placement[SOURCE], []).append(p)
    desired: dict[str, Desired] = {}
    kept_as_is: set[str] = set()
    for load in loads:
        entries = _guarded(load, by_source.get(load.key, []), empty_guard, out)
        if entries is None:
            kept_as_is |= {p.id for p in by_source.get(load.key, [])}
            continue
        for d in entries:
            if d.id in desired:
                out.duplicates.append(d)
            else:
                desired[d.id] = d
    existing = {p.id: p for p in ours}
    for p in ours:
        if p.id in kept_as_is or p.phase in GONE:
            continue
        listed = desired.get(p.id)
        if listed is None or p.withheld is Withheld.DRAINING:
            _drop(p, out)
            if listed is not None:
                out.stuck.append(listed)
        elif changes := _changes(p, listed):
            out.update.append((p.id, changes))
    room = _room(proxies, max_proxies)
    for d in desired.values():
        if d.id in kept_as_is:
            continue
        if (had := existing.get(d.id)) is not None:
            if had.phase in GONE:
                out.stuck.append(d)
            continue
        if room is not None and len(out.add) >= room:
            out.over_max.append(d)
        else:
            out.add.append(d)
    return out


def _guarded(
    load: SourceLoad, had: list[Proxy], guard: float, out: Plan
) -> Sequence[Desired] | None:
    """The load's entries, or None to keep its proxies as they are."""
    if load.entries is None:
        return None
    if not load.guarded:
        return load.entries
    listed = [p for p in had if p.phase not in GONE and p.withheld is not Withheld.DRAINING]
    ids = {d.id for d in load.entries}
    removed = sum(1 for p in listed if p.id not in ids)
    if empty_guard_trips(len(listed), removed, len(load.entries), guard):
        out.held.append(Held(load.key, removed, len(listed)))
        return None
    return load.entries


def _drop(p: Proxy, out: Plan) -> None:
    if p.withheld is not Withheld.DRAINING and p.withheld is not Withheld.QUARANTINED:
        out.drain.append(p.id)
    if not p.lease_id:
        out.delete.append(p.id)


def _changes(p: Proxy, d: Desired) -> dict[str, Any]:
    """Fields of a kept proxy its source changed (the id covers scheme, host, port, user)."""
    changes: dict[str, Any] = {}
    if p.password != d.line.password:
        changes["password"] = d.line.password
    if dict(p.labels) != dict(d.labels):
        changes["labels"] = dict(d.labels)
    if p.zone != d.zone:
        changes["zone"] = d.zone
    if p.placement != d.placement():
        changes["placement"] = d.placement()
    return changes


def _room(proxies: Sequence[Proxy], max_proxies: int | None) -> int | None:
    """New proxies max_proxies still allows (every proxy of the provider counts that
    holds or will hold a place: failed and deleted ones do not)."""
    if max_proxies is None:
        return None
    return max(0, max_proxies - sum(1 for p in proxies if p.phase in COUNTED))
