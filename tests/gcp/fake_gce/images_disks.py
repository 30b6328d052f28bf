"""images get/getFromFamily and the boot disks made from them: disks
list/get/delete/aggregatedList."""

from __future__ import annotations

import copy

from .errors import already_exists, invalid, not_found, resource_in_use
from .faults import Fault
from .filters import parse_filter
from .resources import (
    API,
    Json,
    aggregated_list,
    check_labels,
    check_name,
    fingerprint,
    link,
    new_id,
    now_rfc3339,
    plain_list,
    relative,
)
from .state import ComputeState

DEFAULT_IMAGES = (
    ("debian-cloud", "debian-12-bookworm-v20261110", "debian-12"),
    ("ubuntu-os-cloud", "ubuntu-2404-noble-amd64-v20261101", "ubuntu-2404-lts-amd64"),
)


def add_image(state: ComputeState, project: str, name: str, family: str | None) -> Json:
    image: Json = {
        "kind": "compute#image",
        "id": new_id(),
        "creationTimestamp": now_rfc3339(),
        "name": name,
        "status": "READY",
        "diskSizeGb": "10",
        "sourceType": "RAW",
        "architecture": "X86_64",
        "selfLink": link(project, "global", "images", name),
    }
    if family:
        image["family"] = family
    with state.lock:
        state.images[(project, name)] = image
    return copy.deepcopy(image)


def get_image(state: ComputeState, project: str, name: str) -> Json:
    with state.lock:
        image = state.images.get((project, name))
        if image is None:
            raise not_found(f"projects/{project}/global/images/{name}")
        return copy.deepcopy(image)


def image_from_family(state: ComputeState, project: str, family: str) -> Json:
    with state.lock:
        found = [
            i for (p, _), i in state.images.items() if p == project and i.get("family") == family
        ]
        if not found:
            raise not_found(f"projects/{project}/global/images/family/{family}")
        # The newest image of the family; names sort by their date suffix.
        return copy.deepcopy(max(found, key=lambda i: str(i["name"])))


def image_for(state: ComputeState, source: str) -> Json:
    """The image an instance's boot disk names (`.../images/NAME` or `.../images/family/F`)."""
    path = relative(state.project, source).split("/")
    if len(path) == 5 and path[2:4] == ["global", "images"]:
        return get_image(state, path[1], path[4])
    if len(path) == 6 and path[2:5] == ["global", "images", "family"]:
        return image_from_family(state, path[1], path[5])
    raise invalid("resource.disks[0].initializeParams.sourceImage", source, "Not an image URL.")


def new_disk(
    state: ComputeState, zone: str, name: str, params: Json, image: Json, user: str
) -> Json:
    check_name(name, "resource.disks[].initializeParams.diskName")
    if (zone, name) in state.disks:
        raise already_exists(f"projects/{state.project}/zones/{zone}/disks/{name}")
    size = str(params.get("diskSizeGb") or image["diskSizeGb"])
    if int(size) < int(image["diskSizeGb"]):
        raise invalid(
            "resource.disks[0].initializeParams.diskSizeGb", size, "Smaller than the image."
        )
    disk_type = params.get("diskType") or f"zones/{zone}/diskTypes/pd-standard"
    labels = check_labels(params.get("labels"), "resource.disks[0].initializeParams.labels")
    return {
        "kind": "compute#disk",
        "id": new_id(),
        "creationTimestamp": now_rfc3339(),
        "name": name,
        "sizeGb": size,
        "zone": link(state.project, "zones", zone),
        "status": "READY",
        "selfLink": link(state.project, "zones", zone, "disks", name),
        "sourceImage": image["selfLink"],
        "sourceImageId": image["id"],
        "type": API + relative(state.project, disk_type),
        "labels": labels,
        "labelFingerprint": fingerprint(labels),
        "users": [user],
        "lastAttachTimestamp": now_rfc3339(),
    }


# ---- disks ------------------------------------------------------------------------------


def list_disks(state: ComputeState, zone: str | None, query: dict[str, str]) -> Json:
    with state.lock:
        if zone is not None:
            state.check_zone(zone)
        match = parse_filter(query.get("filter", ""))
        rows = [(z, copy.deepcopy(d)) for (z, _), d in sorted(state.disks.items()) if match(d)]
    if zone is not None:
        return plain_list(
            state.project, "disk", f"zones/{zone}/disks", [d for z, d in rows if z == zone], query
        )
    return aggregated_list(
        state.project,
        "disk",
        "disks",
        [f"zones/{z}" for z in state.zones],
        [(f"zones/{z}", d) for z, d in rows],
        query,
    )


def get_disk(state: ComputeState, zone: str, name: str) -> Json:
    with state.lock:
        state.check_zone(zone)
        disk = state.disks.get((zone, name))
        if disk is None:
            raise not_found(f"projects/{state.project}/zones/{zone}/disks/{name}")
        return copy.deepcopy(disk)


def delete_disk(
    state: ComputeState, zone: str, name: str, query: dict[str, str], fault: Fault | None
) -> Json:
    with state.lock:
        state.check_zone(zone)
        if (op := state.deduped(query)) is not None:
            return op
        disk = state.disks.get((zone, name))
        if disk is None:
            raise not_found(f"projects/{state.project}/zones/{zone}/disks/{name}")
        if disk.get("users"):
            raise resource_in_use(
                f"projects/{state.project}/zones/{zone}/disks/{name}", disk["users"][0]
            )
        return state.new_operation(
            f"zones/{zone}",
            "delete",
            disk["selfLink"],
            disk["id"],
            query,
            fault,
            lambda: state.disks.pop((zone, name), None) and None,
        )
