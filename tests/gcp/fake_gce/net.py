"""firewalls insert/get/patch/update/delete/list and addresses
insert/get/delete/list/aggregatedList (global and regional operations)."""

from __future__ import annotations

import copy
import ipaddress

from .errors import already_exists, bad_request, invalid, not_found
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
    return plain_list(state.project, "firewall", "global/firewalls", rows, query)


# ---- addresses --------------------------------------------------------------------------


def insert_address(
    state: ComputeState, region: str, query: dict[str, str], body: Json, fault: Fault | None
) -> Json:
    with state.lock:
        state.check_region(region)
        if (op := state.deduped(query)) is not None:
            return op
        address = address_body(state, region, body)
        return state.new_operation(
            f"regions/{region}",
            "insert",
            address["selfLink"],
            address["id"],
            query,
            fault,
            lambda: state.addresses.__setitem__((region, address["name"]), address),
        )


def address_body(state: ComputeState, region: str, body: Json) -> Json:
    """A reserved external address (documentation range 203.0.113.0/24: never dialled)."""
    name = check_name(body.get("name"))
    if (region, name) in state.addresses:
        raise already_exists(f"projects/{state.project}/regions/{region}/addresses/{name}")
    n = len(state.addresses) + 1
    labels = check_labels(body.get("labels"))
    return {
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
        return plain_list(
            state.project,
            "address",
            f"regions/{region}/addresses",
            [a for r, a in rows if r == region],
            query,
        )
    return aggregated_list(
        state.project,
        "address",
        "addresses",
        [f"regions/{r}" for r in state.regions],
        [(f"regions/{r}", a) for r, a in rows],
        query,
    )
