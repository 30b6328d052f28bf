"""Which managed resources to delete: a pure function of the provider's list and the
registry's view, so every rule is tested without NATS or Redis; and when to refuse a
round outright (no installation marker, or too large a share of the fleet)."""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from proxyfleet.common.domain.adoption import survived_reset
from proxyfleet.common.wire.models import ManagedResource, Phase, Proxy


class Why(enum.StrEnum):
    """Why a resource is an orphan (also the `reason` label of the deletions metric)."""

    ABSENT = "absent"
    DELETED = "deleted"
    FAILED = "failed"

    def describe(self) -> str:
        return f"proxy {self.value}"


class Refusal(enum.StrEnum):
    """Why a round deletes nothing for a provider (the `reason` label of the refusals
    metric)."""

    NO_MARKER = "no_marker"
    """The registry has no installation marker: it was reset, or GC reads the wrong Redis
    or namespace. Every resource would look orphaned."""
    FOREIGN_MARKER = "foreign_marker"
    """The marker names another installation: this is not our registry."""
    SHARE = "share"
    """The round would delete more than --max-delete-share of the provider's resources."""


@dataclass(frozen=True, slots=True)
class Deletion:
    resource: ManagedResource
    why: Why
    age: float
    """Seconds since the resource was created, at planning time."""


def plan_deletions(
    installation_id: str,
    now: float,
    min_age: float,
    resources: Iterable[ManagedResource],
    proxies: Mapping[str, Proxy | None],
    marker_created_at: float = 0.0,
    tombstoned: Collection[str] = frozenset(),
) -> list[Deletion]:
    """The resources of `installation_id` at least `min_age` seconds old whose proxy is
    absent from the registry (None), deleted or failed, in the order listed.

    `proxies` maps proxy id to the registry's view. A proxy id missing from the mapping
    means "not looked up", not "absent": its resource is kept. Resources of another
    installation, of a proxy in any other phase, or listed twice (after the first) are kept.
    An absent proxy's resource made before the registry's marker (`marker_created_at`) and
    not `tombstoned` survived a store reset: kept, for the provisioner to adopt. A
    tombstoned one counts as deleted.
    """
    out: list[Deletion] = []
    seen: set[str] = set()
    for res in resources:
        if res.installation_id != installation_id or res.resource_id in seen:
            continue
        age = now - res.created_at
        if age < min_age or res.proxy_id not in proxies:
            continue
        proxy = proxies[res.proxy_id]
        if proxy is None and survived_reset(res, marker_created_at, tombstoned):
            continue
        why = _orphan_because(proxy, res.proxy_id in tombstoned)
        if why is not None:
            seen.add(res.resource_id)
            out.append(Deletion(resource=res, why=why, age=age))
    return out


def refusal(
    installation_id: str,
    marker_installation_id: str | None,
    planned: int,
    listed: int,
    max_share: float,
) -> Refusal | None:
    """Why this round must delete nothing for the provider, or None to go ahead.

    `marker_installation_id`: the registry marker's (None: no marker). `listed`: the
    provider's resources of this installation. One deletion is always allowed (a small
    fleet's single leftover); beyond it, at most `max_share` of `listed` (1.0: no limit).
    """
    if marker_installation_id is None:
        return Refusal.NO_MARKER
    if marker_installation_id != installation_id:
        return Refusal.FOREIGN_MARKER
    if max_share < 1.0 and planned > max(1, math.floor(max_share * listed)):
        return Refusal.SHARE
    return None


def _orphan_because(proxy: Proxy | None, tombstoned: bool) -> Why | None:
    if proxy is None:
        return Why.DELETED if tombstoned else Why.ABSENT
    if proxy.phase == Phase.DELETED:
        return Why.DELETED
    if proxy.phase == Phase.FAILED and not proxy.external:
        return Why.FAILED  # an external proxy stays failed, re-probed: nothing to delete
    return None
