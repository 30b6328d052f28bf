"""Which running proxies lost their VM: Google preempted a spot VM (termination action
DELETE: the instance is gone; STOP: it is TERMINATED) or someone deleted it. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from proxyfleet.common.runner.lost import Lost, Running

STOPPED = frozenset({"TERMINATED", "STOPPING", "STOPPED", "SUSPENDING", "SUSPENDED"})


def lost(running: list[Running], statuses: Mapping[str, str]) -> list[Lost]:
    """Each proxy whose instance is missing or stopped. `statuses`: instance status by
    proxy id, from one listing made after the proxies were read."""
    out = []
    for proxy in running:
        status = statuses.get(proxy.proxy_id)
        if status is None:
            reason = "VM gone: preempted by Google (spot) or deleted outside Proxyfleet"
            out.append(Lost(proxy, reason, "gone"))
        elif status in STOPPED:
            out.append(
                Lost(proxy, f"VM {status}: preempted by Google (spot) or stopped", "stopped")
            )
    return out
