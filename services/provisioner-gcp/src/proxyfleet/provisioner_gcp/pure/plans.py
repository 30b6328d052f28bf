"""What the GCP provisioner asks Compute for, as plain data: the instance body, the
firewall rule and its correction, what the sweeper may delete. Pure: no I/O, no Google
import; the adapter turns these dicts into `compute_v1` messages (field names as there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from proxyfleet.provisioner_gcp.pure import names


@dataclass(frozen=True, slots=True)
class FirewallRule:
    """The content of the rule that lets clients reach the proxies (what is reconciled)."""

    name: str
    network: str
    target_tag: str
    port: int
    source_ranges: tuple[str, ...]

    def body(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "network": self.network,
            "direction": "INGRESS",
            "priority": 1000,
            "allowed": [{"I_p_protocol": "tcp", "ports": [str(self.port)]}],
            "source_ranges": list(self.source_ranges),
            "target_tags": [self.target_tag],
            "description": "proxyfleet: clients to the proxy port (managed, do not edit)",
        }


def firewall_changes(want: FirewallRule, have: dict[str, Any] | None) -> dict[str, Any] | None:
    """The patch that turns `have` (the rule as Compute returned it, or None) into `want`:
    None when nothing differs, the whole body when the rule is missing. Compares content
    (ports, ranges, tags, direction, network, disabled), not only the name."""
    body = want.body()
    if have is None:
        return body
    patch: dict[str, Any] = {}
    if _allowed(have.get("allowed", [])) != _allowed(body["allowed"]):
        patch["allowed"] = body["allowed"]
    if sorted(have.get("source_ranges", [])) != sorted(body["source_ranges"]):
        patch["source_ranges"] = body["source_ranges"]
    if sorted(have.get("target_tags", [])) != body["target_tags"]:
        patch["target_tags"] = body["target_tags"]
    if have.get("direction", "INGRESS") != "INGRESS":
        patch["direction"] = "INGRESS"
    if have.get("disabled", False):
        patch["disabled"] = False
    if have.get("source_tags") or have.get("source_service_accounts"):
        # Either would widen who the rule admits beyond the ranges.
        patch["source_tags"] = []
        patch["source_service_accounts"] = []
    if names.last_segment(str(have.get("network", ""))) != names.last_segment(want.network):
        # The network of a rule cannot be patched: recreate it (the caller deletes first).
        return {"recreate": True, **body}
    return patch or None


def _allowed(entries: list[dict[str, Any]]) -> set[tuple[str, tuple[str, ...]]]:
    return {
        (str(e.get("I_p_protocol", "")).lower(), tuple(sorted(str(p) for p in e.get("ports", []))))
        for e in entries
    }


@dataclass(frozen=True, slots=True)
class InstancePlan:
    name: str
    gce_zone: str
    machine_type: str
    source_image: str
    disk_size_gb: int
    disk_type: str
    network: str
    subnetwork: str
    spot: bool
    labels: dict[str, str]
    tags: list[str]
    service_account: str
    user_data: str
    credentials: tuple[str, str]
    external_ip: bool = True
    """An ephemeral external IP (ONE_TO_ONE_NAT); False: the internal address only."""


def instance_body(plan: InstancePlan) -> dict[str, Any]:
    """The Instance insert body: boot disk deleted with the VM, one NIC with an ephemeral
    external IP (unless the plan says none), cloud-init user-data and the credentials in
    metadata, spot scheduling."""
    zone = plan.gce_zone
    nic: dict[str, Any] = {"network": plan.network}
    if plan.external_ip:
        nic["access_configs"] = [
            {"name": "External NAT", "type_": "ONE_TO_ONE_NAT", "network_tier": "PREMIUM"}
        ]
    if plan.subnetwork:
        nic["subnetwork"] = plan.subnetwork
    username, password = plan.credentials
    body: dict[str, Any] = {
        "name": plan.name,
        "machine_type": f"zones/{zone}/machineTypes/{plan.machine_type}",
        "labels": dict(plan.labels),
        "tags": {"items": list(plan.tags)},
        "disks": [
            {
                "boot": True,
                "auto_delete": True,
                "initialize_params": {
                    "source_image": plan.source_image,
                    "disk_size_gb": plan.disk_size_gb,
                    "disk_type": f"zones/{zone}/diskTypes/{plan.disk_type}",
                    "labels": dict(plan.labels),
                },
            }
        ],
        "network_interfaces": [nic],
        "metadata": {
            "items": [
                {"key": names.USER_DATA_KEY, "value": plan.user_data},
                {
                    "key": names.CREDENTIALS_KEY,
                    "value": json.dumps({"username": username, "password": password}),
                },
            ]
        },
        "scheduling": _scheduling(plan.spot),
    }
    if plan.service_account:
        body["service_accounts"] = [
            {
                "email": plan.service_account,
                "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
            }
        ]
    return body


def _scheduling(spot: bool) -> dict[str, Any]:
    if not spot:
        return {"provisioning_model": "STANDARD", "automatic_restart": True}
    return {
        "provisioning_model": "SPOT",
        "instance_termination_action": "DELETE",
        "automatic_restart": False,
        "on_host_maintenance": "TERMINATE",
    }


def credentials_of(metadata_items: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The (username, password) a VM's metadata carries, or None."""
    for key, value in metadata_items:
        if key == names.CREDENTIALS_KEY:
            try:
                doc = json.loads(value)
                return str(doc["username"]), str(doc["password"])
            except (ValueError, KeyError, TypeError):
                return None
    return None


def zone_order(zone: str, zones: dict[str, str], pinned: bool) -> list[tuple[str, str]]:
    """(provider zone, GCE zone) pairs to try: the proxy's own first, then (unpinned) the
    others in config order."""
    first = [(zone, zones[zone])]
    if pinned:
        return first
    return first + [(z, g) for z, g in zones.items() if z != zone]


def landed_zone(requested: str, gce_zone: str, zones: dict[str, str]) -> str:
    """The provider zone of a proxy asked for in `requested` whose VM runs in `gce_zone`:
    "" while that is still `requested`'s GCE zone (nothing to move), else the first provider
    zone mapped to it (a failover, or an adopted VM that went elsewhere before), or "" when
    no provider zone maps to it any more (a config change: the proxy stays where it was)."""
    if zones.get(requested) == gce_zone:
        return ""
    return next((z for z, g in zones.items() if g == gce_zone), "")


@dataclass(frozen=True, slots=True)
class Orphan:
    kind: str
    """disk, address or firewall."""
    name: str
    scope: str
    """The zone (disk), region (address) or "global" (firewall)."""
    created_at: float


def sweepable(orphans: list[Orphan], now: float, min_age: float) -> list[Orphan]:
    """The orphans old enough to delete (a young one may belong to a create in progress)."""
    return [o for o in orphans if now - o.created_at >= min_age]


def timestamp(rfc3339: str) -> float:
    """Compute's creationTimestamp ("2026-12-01T06:00:00.123-08:00") as Unix seconds; 0.0
    when absent or unreadable (such a resource counts as old)."""
    try:
        return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
