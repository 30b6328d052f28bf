"""The instance resource an insert makes from the request body, as Compute fills it in:
URLs made absolute, defaults, the boot disks created from `initializeParams`. Pure
except for the state it reads (images, existing disks)."""

from __future__ import annotations

import copy
import itertools

from .errors import GceError, invalid
from .images_disks import image_for, new_disk
from .resources import (
    Json,
    check_labels,
    check_metadata,
    fingerprint,
    link,
    new_id,
    now_rfc3339,
    relative,
)
from .state import ComputeState

_internal_ips = itertools.count(1)


def build_instance(state: ComputeState, zone: str, name: str, body: Json) -> Json:
    """The instance resource an insert makes (PROVISIONING, no natIP yet)."""
    p = state.project
    machine = relative(p, str(body.get("machineType") or ""))
    if not machine.startswith(f"projects/{p}/zones/{zone}/machineTypes/"):
        raise invalid(
            "resource.machineType",
            body.get("machineType", ""),
            f"Expected zones/{zone}/machineTypes/TYPE (or its full URL).",
        )
    nics = body.get("networkInterfaces") or []
    if not nics:
        raise invalid("resource.networkInterfaces", "", "At least one is required.")
    labels = check_labels(body.get("labels"))
    tags = list((body.get("tags") or {}).get("items") or [])
    instance: Json = {
        **copy.deepcopy(body),
        "kind": "compute#instance",
        "id": new_id(),
        "creationTimestamp": now_rfc3339(),
        "name": name,
        "zone": link(p, "zones", zone),
        "machineType": "https://www.googleapis.com/compute/v1/" + machine,
        "status": "PROVISIONING",
        "labels": labels,
        "labelFingerprint": fingerprint(labels),
        "metadata": check_metadata(body.get("metadata")),
        "tags": {"items": tags, "fingerprint": fingerprint(tags)},
        "networkInterfaces": [_nic(p, i, nic) for i, nic in enumerate(nics)],
        "scheduling": scheduling(body.get("scheduling") or {}),
        "selfLink": link(p, "zones", zone, "instances", name),
        "cpuPlatform": "Intel Broadwell",
        "deletionProtection": bool(body.get("deletionProtection", False)),
        "startRestricted": False,
        "fingerprint": fingerprint(name),
    }
    return instance


def _nic(project: str, index: int, nic: Json) -> Json:
    ip = next(_internal_ips)
    out = copy.deepcopy(nic)
    out["kind"] = "compute#networkInterface"
    out["name"] = f"nic{index}"
    out["network"] = "https://www.googleapis.com/compute/v1/" + relative(
        project, nic.get("network") or "global/networks/default"
    )
    out["networkIP"] = f"10.128.{ip // 250}.{ip % 250 + 2}"
    out["stackType"] = nic.get("stackType", "IPV4_ONLY")
    out["fingerprint"] = fingerprint([index, ip])
    out["accessConfigs"] = [
        {
            "kind": "compute#accessConfig",
            "type": a.get("type", "ONE_TO_ONE_NAT"),
            "name": a.get("name", "External NAT"),
            "networkTier": a.get("networkTier", "PREMIUM"),
        }
        for a in nic.get("accessConfigs") or []
    ]
    return out


def boot_disks(state: ComputeState, zone: str, name: str, body: Json, instance: Json) -> list[Json]:
    """The disks an insert creates from `initializeParams`; attaches them to `instance`."""
    disks = body.get("disks") or []
    if not disks or not any(d.get("boot") for d in disks):
        raise invalid("resource.disks", "", "A boot disk is required.")
    made: list[Json] = []
    attached: list[Json] = []
    for index, d in enumerate(disks):
        params = d.get("initializeParams")
        if params is None:
            raise GceError(400, "invalid", "Attaching existing disks is not faked.")
        disk_name = params.get("diskName") or (name if index == 0 else f"{name}-{index}")
        image = image_for(state, str(params.get("sourceImage") or ""))
        disk = new_disk(state, zone, disk_name, params, image, instance["selfLink"])
        made.append(disk)
        attached.append(
            {
                "kind": "compute#attachedDisk",
                "type": "PERSISTENT",
                "mode": d.get("mode", "READ_WRITE"),
                "source": disk["selfLink"],
                "deviceName": d.get("deviceName") or f"persistent-disk-{index}",
                "index": index,
                "boot": bool(d.get("boot", False)),
                "autoDelete": bool(d.get("autoDelete", False)),
                "interface": d.get("interface", "SCSI"),
                "diskSizeGb": disk["sizeGb"],
            }
        )
    instance["disks"] = attached
    return made


def scheduling(given: Json) -> Json:
    """Compute's defaults; a spot VM cannot restart by itself."""
    out = dict(given)
    if out.get("provisioningModel") == "SPOT":
        if out.get("automaticRestart") is True:
            raise invalid("resource.scheduling.automaticRestart", True, "Spot VMs cannot restart.")
        out.setdefault("automaticRestart", False)
        out.setdefault("onHostMaintenance", "TERMINATE")
        out.setdefault("instanceTerminationAction", "STOP")
    else:
        out.setdefault("provisioningModel", "STANDARD")
        out.setdefault("automaticRestart", True)
        out.setdefault("onHostMaintenance", "MIGRATE")
    out.setdefault("preemptible", False)
    return out
