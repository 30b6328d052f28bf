"""images get/getFromFamily, disks list/get/delete/aggregatedList, firewalls
insert/get/patch/update/delete/list, addresses insert/get/delete/list/aggregatedList."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from .errors import already_exists, bad_request, invalid, not_found, resource_in_use
from .faults import Fault
from .filters import parse_filter
from .resources import (
    API,
    check_labels,
    check_name,
    fingerprint,
    link,
    new_id,
    now_rfc3339,
    page,
    region_of,
    relative,
    scoped_list_warning,
)
from .state import ComputeState, Json

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
        return _plain_list(
            state, "disk", f"zones/{zone}/disks", [d for z, d in rows if z == zone], query
        )
    return _aggregated(
        state,
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


# ---- firewalls --------------------------------------------------------------------------


def _firewall(state: ComputeState, body: Json, old: Json | None) -> Json:
    name = check_name(body.get("name"))
    merged = {**(old or {}), **copy.deepcopy(body)}
    for i, cidr in enumerate(merged.get("sourceRanges") or []):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError as exc:
            raise invalid(
                f"resource.sourceRanges[{i}]", cidr, "Must be a CIDR address range."
            ) from exc
    if not merged.get("allowed") and not merged.get("denied"):
        raise bad_request("Required field 'allowed' or 'denied' not specified")
    for rule in (merged.get("allowed") or []) + (merged.get("denied") or []):
        if "IPProtocol" not in rule:
            raise invalid("resource.allowed[].IPProtocol", "", "Required.")
    merged.update(
        kind="compute#firewall",
        name=name,
        id=(old or {}).get("id") or new_id(),
        creationTimestamp=(old or {}).get("creationTimestamp") or now_rfc3339(),
        network=API + relative(state.project, merged.get("network") or "global/networks/default"),
        direction=merged.get("direction", "INGRESS"),
        priority=int(merged.get("priority", 1000)),
        disabled=bool(merged.get("disabled", False)),
        selfLink=link(state.project, "global", "firewalls", name),
    )
    return merged


def insert_firewall(
    state: ComputeState, query: dict[str, str], body: Json, fault: Fault | None
) -> Json:
    with state.lock:
        if (op := state.deduped(query)) is not None:
            return op
        fw = _firewall(state, body, None)
        if fw["name"] in state.firewalls:
            raise already_exists(f"projects/{state.project}/global/firewalls/{fw['name']}")
        return state.new_operation(
            "global",
            "insert",
            fw["selfLink"],
            fw["id"],
            query,
            fault,
            lambda: state.firewalls.__setitem__(fw["name"], fw),
        )


def change_firewall(
    state: ComputeState,
    name: str,
    query: dict[str, str],
    body: Json,
    fault: Fault | None,
    *,
    patch: bool,
) -> Json:
    with state.lock:
        if (op := state.deduped(query)) is not None:
            return op
        old = state.firewalls.get(name)
        if old is None:
            raise not_found(f"projects/{state.project}/global/firewalls/{name}")
        body = {"name": name, **body}
        if body["name"] != name:
            raise invalid("resource.name", body["name"], "The name cannot change.")
        base = old if patch else {k: old[k] for k in ("id", "creationTimestamp")}
        fw = _firewall(state, body, base)
        return state.new_operation(
            "global",
            "patch" if patch else "update",
            fw["selfLink"],
            fw["id"],
            query,
            fault,
            lambda: state.firewalls.__setitem__(name, fw),
        )


def get_firewall(state: ComputeState, name: str) -> Json:
    with state.lock:
        fw = state.firewalls.get(name)
        if fw is None:
            raise not_found(f"projects/{state.project}/global/firewalls/{name}")
        return copy.deepcopy(fw)


def delete_firewall(
    state: ComputeState, name: str, query: dict[str, str], fault: Fault | None
) -> Json:
    with state.lock:
        if (op := state.deduped(query)) is not None:
            return op
        fw = state.firewalls.get(name)
        if fw is None:
            raise not_found(f"projects/{state.project}/global/firewalls/{name}")
        return state.new_operation(
            "global",
            "delete",
            fw["selfLink"],
            fw["id"],
            query,
            fault,
            lambda: state.firewalls.pop(name, None) and None,
        )


def list_firewalls(state: ComputeState, query: dict[str, str]) -> Json:
    with state.lock:
        match = parse_filter(query.get("filter", ""))
        rows = [copy.deepcopy(f) for _, f in sorted(state.firewalls.items()) if match(f)]
    return _plain_list(state, "firewall", "global/firewalls", rows, query)


# ---- addresses --------------------------------------------------------------------------


def insert_address(
    state: ComputeState, region: str, query: dict[str, str], body: Json, fault: Fault | None
) -> Json:
    with state.lock:
        state.check_region(region)
        if (op := state.deduped(query)) is not None:
            return op
        name = check_name(body.get("name"))
        if (region, name) in state.addresses:
            raise already_exists(f"projects/{state.project}/regions/{region}/addresses/{name}")
        n = len(state.addresses) + 1
        labels = check_labels(body.get("labels"))
        address = {
            **copy.deepcopy(body),
            "kind": "compute#address",
            "id": new_id(),
            "creationTimestamp": now_rfc3339(),
            "name": name,
            "address": body.get("address") or f"203.0.113.{n % 250 + 1}",
            "addressType": body.get("addressType", "EXTERNAL"),
            "status": "RESERVED",
            "region": link(state.project, "regions", region),
            "labels": labels,
            "labelFingerprint": fingerprint(labels),
            "selfLink": link(state.project, "regions", region, "addresses", name),
        }
        return state.new_operation(
            f"regions/{region}",
            "insert",
            address["selfLink"],
            address["id"],
            query,
            fault,
            lambda: state.addresses.__setitem__((region, name), address),
        )


def get_address(state: ComputeState, region: str, name: str) -> Json:
    with state.lock:
        address = state.addresses.get((region, name))
        if address is None:
            raise not_found(f"projects/{state.project}/regions/{region}/addresses/{name}")
        return copy.deepcopy(address)


def delete_address(
    state: ComputeState, region: str, name: str, query: dict[str, str], fault: Fault | None
) -> Json:
    with state.lock:
        state.check_region(region)
        if (op := state.deduped(query)) is not None:
            return op
        address = state.addresses.get((region, name))
        if address is None:
            raise not_found(f"projects/{state.project}/regions/{region}/addresses/{name}")
        return state.new_operation(
            f"regions/{region}",
            "delete",
            address["selfLink"],
            address["id"],
            query,
            fault,
            lambda: state.addresses.pop((region, name), None) and None,
        )


def list_addresses(state: ComputeState, region: str | None, query: dict[str, str]) -> Json:
    with state.lock:
        match = parse_filter(query.get("filter", ""))
        rows = [(r, copy.deepcopy(a)) for (r, _), a in sorted(state.addresses.items()) if match(a)]
    if region is not None:
        state.check_region(region)
        return _plain_list(
            state,
            "address",
            f"regions/{region}/addresses",
            [a for r, a in rows if r == region],
            query,
        )
    return _aggregated(
        state,
        "address",
        "addresses",
        [f"regions/{r}" for r in state.regions],
        [(f"regions/{r}", a) for r, a in rows],
        query,
    )


# ---- list shapes ------------------------------------------------------------------------


def _plain_list(
    state: ComputeState, kind: str, path: str, rows: list[Json], query: dict[str, str]
) -> Json:
    chunk, token = page(rows, query.get("maxResults"), query.get("pageToken"))
    out: Json = {
        "kind": f"compute#{kind}List",
        "id": f"projects/{state.project}/{path}",
        "items": chunk,
        "selfLink": link(state.project, path),
    }
    if token:
        out["nextPageToken"] = token
    return out


def _aggregated(
    state: ComputeState,
    kind: str,
    field: str,
    scopes: list[str],
    rows: list[tuple[str, Json]],
    query: dict[str, str],
) -> Json:
    chunk, token = page(rows, query.get("maxResults"), query.get("pageToken"))
    items: dict[str, Any] = {}
    for scope in scopes:
        found = [r for s, r in chunk if s == scope]
        items[scope] = {field: found} if found else {"warning": scoped_list_warning(scope)}
    out: Json = {
        "kind": f"compute#{kind}AggregatedList",
        "id": f"projects/{state.project}/aggregated/{field}",
        "items": items,
        "selfLink": link(state.project, "aggregated", field),
    }
    if token:
        out["nextPageToken"] = token
    return out


__all__ = ["DEFAULT_IMAGES", "region_of"]
