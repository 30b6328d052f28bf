"""instances.insert/get/delete/list/aggregatedList, and what booting and preempting do."""

from __future__ import annotations

import copy
import logging
from typing import Any, Protocol

from .errors import already_exists, not_found
from .faults import Fault
from .filters import parse_filter
from .instance_body import boot_disks, build_instance
from .resources import (
    Json,
    check_name,
    link,
    metadata_value,
    now_rfc3339,
    page,
    scoped_list_warning,
)
from .state import ComputeState, Instance

log = logging.getLogger(__name__)

UNREACHABLE_IP = "127.255.255.254"
"""natIP of an instance whose proxy did not boot: loopback, and nothing listens there."""


class Booter(Protocol):
    def boot(self, key: str, user_data: str, delay: float, *, egress: str | None) -> Any: ...
    def stop(self, key: str) -> None: ...


class Instances:
    def __init__(self, state: ComputeState, booter: Booter) -> None:
        self.s = state
        self.booter = booter

    def insert(self, zone: str, query: dict[str, str], body: Json, fault: Fault | None) -> Json:
        s = self.s
        with s.lock:
            s.check_zone(zone)
            if (op := s.deduped(query)) is not None:
                return op
            name = check_name(body.get("name"))
            key = (zone, name)
            path = f"projects/{s.project}/zones/{zone}/instances/{name}"
            if key in s.instances:
                raise already_exists(path)
            instance = build_instance(s, zone, name, body)
            disks = boot_disks(s, zone, name, body, instance)
            for disk in disks:
                s.disks[(zone, disk["name"])] = disk
            record = Instance(body=instance)
            s.instances[key] = record
            return s.new_operation(
                f"zones/{zone}",
                "insert",
                instance["selfLink"],
                instance["id"],
                query,
                fault,
                lambda: self._boot(key, record),
                slow=True,
                on_running=lambda: instance.update(status="STAGING"),
                on_fail=lambda: self._forget(key),
            )

    def get(self, zone: str, name: str) -> Json:
        with self.s.lock:
            self.s.check_zone(zone)
            record = self.s.instances.get((zone, name))
            if record is None:
                raise not_found(f"projects/{self.s.project}/zones/{zone}/instances/{name}")
            return copy.deepcopy(record.body)

    def delete(self, zone: str, name: str, query: dict[str, str], fault: Fault | None) -> Json:
        s = self.s
        with s.lock:
            s.check_zone(zone)
            if (op := s.deduped(query)) is not None:
                return op
            record = s.instances.get((zone, name))
            if record is None:
                raise not_found(f"projects/{s.project}/zones/{zone}/instances/{name}")
            return s.new_operation(
                f"zones/{zone}",
                "delete",
                record.body["selfLink"],
                record.body["id"],
                query,
                fault,
                lambda: self._delete((zone, name)),
                slow=True,
                on_running=lambda: record.body.update(status="STOPPING"),
            )

    def list_zone(self, zone: str, query: dict[str, str]) -> Json:
        with self.s.lock:
            self.s.check_zone(zone)
            match = parse_filter(query.get("filter", ""))
            items = [
                copy.deepcopy(r.body)
                for (z, _), r in sorted(self.s.instances.items())
                if z == zone and match(r.body)
            ]
        chunk, token = page(items, query.get("maxResults"), query.get("pageToken"))
        out: Json = {
            "kind": "compute#instanceList",
            "id": f"projects/{self.s.project}/zones/{zone}/instances",
            "items": chunk,
            "selfLink": link(self.s.project, "zones", zone, "instances"),
        }
        if token:
            out["nextPageToken"] = token
        return out

    def aggregated_list(self, query: dict[str, str]) -> Json:
        with self.s.lock:
            match = parse_filter(query.get("filter", ""))
            items = [
                (z, copy.deepcopy(r.body))
                for (z, _), r in sorted(self.s.instances.items())
                if match(r.body)
            ]
        chunk, token = page(items, query.get("maxResults"), query.get("pageToken"))
        scopes: dict[str, Json] = {}
        for zone in self.s.zones:
            found = [body for z, body in chunk if z == zone]
            scope = f"zones/{zone}"
            scopes[scope] = (
                {"instances": found} if found else {"warning": scoped_list_warning(scope)}
            )
        out: Json = {
            "kind": "compute#instanceAggregatedList",
            "id": f"projects/{self.s.project}/aggregated/instances",
            "items": scopes,
            "selfLink": link(self.s.project, "aggregated", "instances"),
        }
        if token:
            out["nextPageToken"] = token
        return out

    def preempt(self, name: str, zone: str | None = None) -> None:
        """What Google does to a spot VM it reclaims: its termination action, DELETE (the
        instance is gone) or STOP (TERMINATED, ephemeral IP released)."""
        s = self.s
        with s.lock:
            keys = [k for k in s.instances if k[1] == name and zone in (None, k[0])]
            if not keys:
                raise KeyError(f"no instance named {name!r}")
            key = keys[0]
            record = s.instances[key]
            if record.body["status"] != "RUNNING":
                raise ValueError(f"instance {name!r} is {record.body['status']}, not RUNNING")
            scheduling = record.body.get("scheduling", {})
            if scheduling.get("provisioningModel") != "SPOT" and not scheduling.get("preemptible"):
                raise ValueError(f"instance {name!r} is not a spot (or preemptible) VM")
            action = scheduling.get("instanceTerminationAction", "STOP")
            s.system_operation(
                f"zones/{key[0]}",
                "compute.instances.preempted",
                record.body["selfLink"],
                record.body["id"],
            )
        self.booter.stop(_boot_key(record))
        with s.lock:
            if action == "DELETE":
                self._forget(key)
            else:
                record.body["status"] = "TERMINATED"
                for nic in record.body.get("networkInterfaces", []):
                    for access in nic.get("accessConfigs", []):
                        access.pop("natIP", None)

    # ---- effects ----------------------------------------------------------------------

    def _boot(self, key: tuple[str, str], record: Instance) -> None:
        """Runs in the pool: the guest starts Squid from its user-data; then RUNNING."""
        user_data = metadata_value(record.body, "user-data")
        address = UNREACHABLE_IP
        error: str | None = None
        if not self.s.settings.boot:
            error = "booting is off (settings.boot)"
        elif user_data is None:
            error = "no user-data in the metadata"
        else:
            try:
                booted = self.booter.boot(
                    _boot_key(record),
                    user_data,
                    self.s.settings.guest_boot_s,
                    egress=None if _external(record) else self.s.settings.cloud_nat_address,
                )
                address = booted.address
            except Exception as exc:  # the VM runs; only its proxy is missing
                error = str(exc)
                log.warning("fake GCE: %s did not boot a proxy: %s", key[1], error)
        with self.s.lock:
            if self.s.instances.get(key) is not record:
                self.booter.stop(_boot_key(record))  # deleted while booting
                return
            record.boot_error = error
            record.booted = error is None
            record.body["status"] = "RUNNING"
            record.body["lastStartTimestamp"] = now_rfc3339()
            for nic in record.body.get("networkInterfaces", [])[:1]:
                for access in nic.get("accessConfigs", [])[:1]:
                    access["natIP"] = address
                if not nic.get("accessConfigs"):
                    # Reached inside the VPC: its internal address is where Squid listens.
                    nic["networkIP"] = address

    def _delete(self, key: tuple[str, str]) -> None:
        with self.s.lock:
            record = self.s.instances.get(key)
        if record is not None:
            self.booter.stop(_boot_key(record))
        with self.s.lock:
            if self.s.instances.get(key) is record:
                self._forget(key)

    def _forget(self, key: tuple[str, str]) -> None:
        """The instance is gone: auto-delete disks go with it, the others are detached."""
        record = self.s.instances.pop(key, None)
        if record is None:
            return
        for attached in record.body.get("disks", []):
            disk_key = (key[0], attached["source"].rsplit("/", 1)[-1])
            disk = self.s.disks.get(disk_key)
            if disk is None:
                continue
            if attached.get("autoDelete"):
                del self.s.disks[disk_key]
            else:
                disk["users"] = [u for u in disk.get("users", []) if u != record.body["selfLink"]]


def _external(record: Instance) -> bool:
    """Whether the instance has an external IP (an access config on its first NIC)."""
    nics = record.body.get("networkInterfaces") or [{}]
    return bool(nics[0].get("accessConfigs"))


def _boot_key(record: Instance) -> str:
    """`zone-name#id`: a VM re-created under the same name never shares its predecessor's
    Squid (a late stop of the old one must not reach the new one)."""
    zone = record.body["zone"].rsplit("/", 1)[-1]
    return f"{zone}-{record.body['name']}#{record.body['id']}"
