"""Which managed resources to delete: a pure function of the provider's list and the
registry's view, so every rule is tested without NATS or Redis."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from proxyfleet.common.models import ManagedResource, Phase, Proxy


class Why(enum.StrEnum):
    """Why a resource is an orphan (also the `reason` label of the deletions metric)."""

    ABSENT = "absent"
    DELETED = "deleted"
    FAILED = "failed"

    def describe(self) -> str:
        return f"proxy {self.value}"


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
) -> list[Deletion]:
    """The resources of `installation_id` at least `min_age` seconds old whose proxy is
    absent from the registry (None), deleted or failed, in the order listed.

    `proxies` maps proxy id to the registry's view. A proxy id missing from the mapping
    means "not looked up", not "absent": its resource is kept. Resources of another
    installation, of a proxy in any other phase, or listed twice (after the first) are kept.
    """
    out: list[Deletion] = []
    seen: set[str] = set()
    for res in resources:
        if res.installation_id != installation_id or res.resource_id in seen:
            continue
        age = now - res.created_at
        if age < min_age or res.proxy_id not in proxies:
            continue
        why = _orphan_because(proxies[res.proxy_id])
        if why is not None:
            seen.add(res.resource_id)
            out.append(Deletion(resource=res, why=why, age=age))
    return out


def _orphan_because(proxy: Proxy | None) -> Why | None:
    if proxy is None:
        return Why.ABSENT
    if proxy.phase == Phase.DELETED:
        return Why.DELETED
    if proxy.phase == Phase.FAILED:
        return Why.FAILED
    return None
