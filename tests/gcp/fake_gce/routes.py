"""Compute v1 REST paths (as google-cloud-compute's REST transport builds them) → the
fake's handlers. Each route names its API method as Google's discovery document does
(`instances.insert`, `zoneOperations.wait`): the keys of `calls` and of `inject`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from . import images_disks, net
from .faults import Fault
from .instances import Instances
from .resources import Json
from .state import ComputeState, raise_for_project

Handler = Callable[[dict[str, str], dict[str, str], Json, Fault | None], Json]
"""(path parameters, query, body, fault) → the JSON answer."""


@dataclass(frozen=True)
class Route:
    verb: str
    pattern: re.Pattern[str]
    method: str
    handler: Handler
    image: bool = False
    """Image paths may name another project (debian-cloud); the rest only the fake's."""


def build_routes(state: ComputeState, instances: Instances) -> list[Route]:
    s = state
    table: list[tuple[str, str, str, Handler]] = [
        (
            "POST",
            "zones/{zone}/instances",
            "instances.insert",
            lambda p, q, b, f: instances.insert(p["zone"], q, b, f),
        ),
        (
            "GET",
            "zones/{zone}/instances",
            "instances.list",
            lambda p, q, b, f: instances.list_zone(p["zone"], q),
        ),
        (
            "GET",
            "zones/{zone}/instances/{name}",
            "instances.get",
            lambda p, q, b, f: instances.get(p["zone"], p["name"]),
        ),
        (
            "DELETE",
            "zones/{zone}/instances/{name}",
            "instances.delete",
            lambda p, q, b, f: instances.delete(p["zone"], p["name"], q, f),
        ),
        (
            "GET",
            "aggregated/instances",
            "instances.aggregatedList",
            lambda p, q, b, f: instances.aggregated_list(q),
        ),
        (
            "GET",
            "zones/{zone}/operations/{name}",
            "zoneOperations.get",
            lambda p, q, b, f: s.get_operation(f"zones/{p['zone']}", p["name"]),
        ),
        (
            "GET",
            "zones/{zone}/operations",
            "zoneOperations.list",
            lambda p, q, b, f: s.list_operations(f"zones/{p['zone']}", q),
        ),
        (
            "POST",
            "zones/{zone}/operations/{name}/wait",
            "zoneOperations.wait",
            lambda p, q, b, f: s.wait_operation(f"zones/{p['zone']}", p["name"]),
        ),
        (
            "GET",
            "global/operations/{name}",
            "globalOperations.get",
            lambda p, q, b, f: s.get_operation("global", p["name"]),
        ),
        (
            "POST",
            "global/operations/{name}/wait",
            "globalOperations.wait",
            lambda p, q, b, f: s.wait_operation("global", p["name"]),
        ),
        (
            "GET",
            "regions/{region}/operations/{name}",
            "regionOperations.get",
            lambda p, q, b, f: s.get_operation(f"regions/{p['region']}", p["name"]),
        ),
        (
            "POST",
            "regions/{region}/operations/{name}/wait",
            "regionOperations.wait",
            lambda p, q, b, f: s.wait_operation(f"regions/{p['region']}", p["name"]),
        ),
        (
            "GET",
            "zones/{zone}/disks",
            "disks.list",
            lambda p, q, b, f: images_disks.list_disks(s, p["zone"], q),
        ),
        (
            "GET",
            "aggregated/disks",
            "disks.aggregatedList",
            lambda p, q, b, f: images_disks.list_disks(s, None, q),
        ),
        (
            "GET",
            "zones/{zone}/disks/{name}",
            "disks.get",
            lambda p, q, b, f: images_disks.get_disk(s, p["zone"], p["name"]),
        ),
        (
            "DELETE",
            "zones/{zone}/disks/{name}",
            "disks.delete",
            lambda p, q, b, f: images_disks.delete_disk(s, p["zone"], p["name"], q, f),
        ),
        (
            "POST",
            "global/firewalls",
            "firewalls.insert",
            lambda p, q, b, f: net.insert_firewall(s, q, b, f),
        ),
        (
            "GET",
            "global/firewalls",
            "firewalls.list",
            lambda p, q, b, f: net.list_firewalls(s, q),
        ),
        (
            "GET",
            "global/firewalls/{name}",
            "firewalls.get",
            lambda p, q, b, f: net.get_firewall(s, p["name"]),
        ),
        (
            "PATCH",
            "global/firewalls/{name}",
            "firewalls.patch",
            lambda p, q, b, f: net.change_firewall(s, p["name"], q, b, f, patch=True),
        ),
        (
            "PUT",
            "global/firewalls/{name}",
            "firewalls.update",
            lambda p, q, b, f: net.change_firewall(s, p["name"], q, b, f, patch=False),
        ),
        (
            "DELETE",
            "global/firewalls/{name}",
            "firewalls.delete",
            lambda p, q, b, f: net.delete_firewall(s, p["name"], q, f),
        ),
        (
            "POST",
            "regions/{region}/addresses",
            "addresses.insert",
            lambda p, q, b, f: net.insert_address(s, p["region"], q, b, f),
        ),
        (
            "GET",
            "regions/{region}/addresses",
            "addresses.list",
            lambda p, q, b, f: net.list_addresses(s, p["region"], q),
        ),
        (
            "GET",
            "aggregated/addresses",
            "addresses.aggregatedList",
            lambda p, q, b, f: net.list_addresses(s, None, q),
        ),
        (
            "GET",
            "regions/{region}/addresses/{name}",
            "addresses.get",
            lambda p, q, b, f: net.get_address(s, p["region"], p["name"]),
        ),
        (
            "DELETE",
            "regions/{region}/addresses/{name}",
            "addresses.delete",
            lambda p, q, b, f: net.delete_address(s, p["region"], p["name"], q, f),
        ),
        (
            "GET",
            "global/images/family/{family}",
            "images.getFromFamily",
            lambda p, q, b, f: images_disks.image_from_family(s, p["project"], p["family"]),
        ),
        (
            "GET",
            "global/images/{name}",
            "images.get",
            lambda p, q, b, f: images_disks.get_image(s, p["project"], p["name"]),
        ),
    ]
    routes = []
    for verb, template, method, handler in table:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
        pattern = re.compile(rf"/compute/v1/projects/(?P<project>[^/]+)/{regex}")
        routes.append(Route(verb, pattern, method, handler, image=method.startswith("images.")))
    return routes


def match(routes: list[Route], verb: str, path: str) -> tuple[Route, dict[str, str]] | None:
    for route in routes:
        m = route.pattern.fullmatch(path)
        if m is not None and route.verb == verb:
            return route, m.groupdict()
    return None


def check_project(state: ComputeState, route: Route, params: dict[str, str]) -> None:
    if not route.image:
        raise_for_project(state, params["project"])
