"""Which running proxies lost their VM: Google preempted a spot VM (termination action
DELETE: the instance is gone; STOP: it is TERMINATED) or someone deleted it. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STOPPED = frozenset({"TERMINATED", "STOPPING", "STOPPED", "SUSPENDING", "SUSPENDED"})


@dataclass(frozen=True, slots=True)
class Running:
    """A proxy the registry says has its VM (booting, ready or unhealthy)."""

    proxy_id: str
    gen: int
    resource_id: str


def lost(running: list[Running], statuses: Mapping[str, str]) -> list[tuple[Running, str]]:
    """(proxy, reason) for each proxy whose instance is missing or stopped. `statuses`:
    instance status by proxy id, from one listing made after the proxies were read."""
    out = []
    for proxy in running:
        status = statuses.get(proxy.proxy_id)
        if status is None:
            out.append((proxy, "VM gone: preempted by Google (spot) or deleted outside Proxyfleet"))
        elif status in STOPPED:
            out.append((proxy, f"VM {status}: preempted by Google (spot) or stopped"))
    return out
