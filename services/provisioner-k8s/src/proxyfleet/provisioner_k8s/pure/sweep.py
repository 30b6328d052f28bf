"""Which Secrets, ConfigMaps and Services of this installation outlived their pod.

Their owner reference makes the cluster delete them with the pod; what is left has no
owner (made by a provisioner that died between the pod's delete and theirs, or an owner
reference that never matched), and is deleted once older than the minimum age (younger
ones may belong to a create in progress, whose pod is being made). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from proxyfleet.provisioner_k8s.pure import names
from proxyfleet.provisioner_k8s.pure.pods import created_at


@dataclass(frozen=True, slots=True)
class Leftover:
    resource: str
    """Plural resource: secrets, configmaps or services."""
    name: str
    proxy_id: str
    created_at: float


def leftover(resource: str, obj: Mapping[str, Any]) -> Leftover:
    meta = obj.get("metadata") or {}
    return Leftover(
        resource=resource,
        name=str(meta.get("name", "")),
        proxy_id=str((meta.get("labels") or {}).get(names.LABEL_PROXY, "")),
        created_at=created_at(meta),
    )


def orphans(
    found: list[Leftover], pod_names: Collection[str], now: float, min_age: float
) -> list[Leftover]:
    """The objects whose pod (same name) is gone and that are at least `min_age` old
    (an object without any creation time is taken for old)."""
    return [o for o in found if o.name not in pod_names and now - o.created_at >= min_age]
