"""Which managed resources outlived their registry entry (a store reset) and may be
registered again. Pure: shared by the provisioner's adopter and GC's plan, so both draw
the same line between a reset's survivor and a true orphan.

A resource with no registry entry survived a reset when it was made before the
installation marker (the marker is written again, with a later `created_at`, when a writer
finds the store empty) and its proxy id is not tombstoned (deleted proxies leave one).
A resource made after the marker, with no entry, was never registered or its entry
expired after a delete: an orphan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.wire.models import ManagedResource, Phase, Proxy


def survived_reset(
    resource: ManagedResource, marker_created_at: float, tombstoned: Collection[str]
) -> bool:
    """Made before the registry's marker and never deleted: its entry was lost, not ended."""
    return resource.created_at < marker_created_at and resource.proxy_id not in tombstoned


def plan_adoptions(
    installation_id: str,
    marker_created_at: float,
    resources: Iterable[ManagedResource],
    proxies: Mapping[str, Proxy | None],
    tombstoned: Collection[str],
) -> list[ManagedResource]:
    """The resources of `installation_id` to register again, one per proxy id, in the order
    listed: looked up (a proxy id missing from `proxies` is not taken for absent), absent,
    survived the reset, and carrying their credentials and zone."""
    out: list[ManagedResource] = []
    seen: set[str] = set()
    for res in resources:
        if (
            res.installation_id != installation_id
            or res.proxy_id in seen
            or res.proxy_id not in proxies
            or proxies[res.proxy_id] is not None
        ):
            continue
        if res.adoptable and survived_reset(res, marker_created_at, tombstoned):
            seen.add(res.proxy_id)
            out.append(res)
    return out


def adopted_proxy(provider: str, res: ManagedResource, now: float, boot_timeout: float) -> Proxy:
    """The registry entry rebuilt from the resource: booting when its address is known
    (health probes it, a good probe makes it ready), else provisioning (the runner's create
    adopts the resource and finds the address). A pool's member is one again by its label."""
    known = bool(res.host and res.port)
    return Proxy(
        id=res.proxy_id,
        provider=provider,
        zone=res.zone,
        phase=Phase.BOOTING if known else Phase.PROVISIONING,
        gen=1,
        username=res.username,
        password=res.password,
        created_at=res.created_at,
        updated_at=now,
        labels=dict(res.labels),
        placement=dict(res.placement),
        pool=res.labels.get(POOL_LABEL, ""),
        host=res.host if known else "",
        port=res.port if known else 0,
        resource_id=res.resource_id if known else "",
        boot_deadline=now + boot_timeout if known else 0.0,
    )
