"""`FakeGce`: the fake's face to a test. The server answers on its own threads; everything
here reads or changes the same locked state, so a test can inspect what a provisioner in
another process did."""

from __future__ import annotations

import copy
from typing import Any

from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials

from . import net
from .faults import Fault
from .images_disks import DEFAULT_IMAGES, add_image
from .instances import Instances
from .routes import build_routes
from .server import FakeServer, Hold
from .squid_boot import SquidBooter
from .state import ComputeState, Settings

DEFAULT_ZONES = ("us-central1-a", "us-central1-b", "europe-west1-b")


class FakeGce:
    def __init__(
        self,
        project: str = "pf-fake-project",
        zones: tuple[str, ...] | list[str] = DEFAULT_ZONES,
        settings: Settings | None = None,
    ) -> None:
        self.project = project
        self.zones = list(zones)
        self.settings = settings or Settings()
        self.state = ComputeState(project, self.zones, self.settings)
        self.booter = SquidBooter()
        if not self.settings.cloud_nat_address:
            self.settings.cloud_nat_address = self.booter.unassigned_address
        self._instances = Instances(self.state, self.booter)
        for image_project, name, family in DEFAULT_IMAGES:
            add_image(self.state, image_project, name, family)
        self.server = FakeServer(self.state, build_routes(self.state, self._instances))
        self.endpoint = self.server.endpoint
        """`http://127.0.0.1:PORT`: give it to the client as `ClientOptions(api_endpoint=)`."""

    def start(self) -> FakeGce:
        self.state.start()
        self.server.start()
        return self

    def close(self) -> None:
        """Stops answering, then every Squid it started (by pid) and removes their folders."""
        self.server.stop()
        self.state.close()
        self.booter.stop_all()

    # ---- what a test reads ------------------------------------------------------------

    @property
    def squid_available(self) -> bool:
        return self.booter.squid is not None

    @property
    def calls(self) -> dict[str, int]:
        """API calls so far by method (`instances.insert`, `zoneOperations.wait`, ...)."""
        with self.state.lock:
            return dict(self.state.calls)

    def instances(self) -> list[dict[str, Any]]:
        """Every instance: name, zone, labels, status, natIP, metadata (key → value),
        scheduling, boot_error (why no proxy runs, or None), and the full `resource`."""
        with self.state.lock:
            out = []
            for (zone, name), record in sorted(self.state.instances.items()):
                body = record.body
                nics = body.get("networkInterfaces") or [{}]
                access = (nics[0].get("accessConfigs") or [{}])[0]
                out.append(
                    {
                        "name": name,
                        "zone": zone,
                        "labels": dict(body.get("labels", {})),
                        "status": body["status"],
                        "natIP": access.get("natIP"),
                        "metadata": {
                            i["key"]: i.get("value") for i in body["metadata"].get("items", [])
                        },
                        "scheduling": dict(body.get("scheduling", {})),
                        "boot_error": record.boot_error,
                        "resource": copy.deepcopy(body),
                    }
                )
            return out

    def firewalls(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return [copy.deepcopy(f) for _, f in sorted(self.state.firewalls.items())]

    def disks(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return [copy.deepcopy(d) for _, d in sorted(self.state.disks.items())]

    def addresses(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return [copy.deepcopy(a) for _, a in sorted(self.state.addresses.items())]

    def operations(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return [copy.deepcopy(o.body) for o in self.state.operations.values()]

    def squids(self) -> dict[str, int]:
        """`zone-name` → pid of each Squid still running."""
        return {key.split("#")[0]: pid for key, pid in self.booter.running().items()}

    def leftovers(self) -> dict[str, list[str]]:
        """What is still there, by kind (instances, disks, addresses, firewalls, squids),
        kinds with nothing omitted: `{}` after a clean run."""
        found = {
            "instances": [f"{i['zone']}/{i['name']}" for i in self.instances()],
            "disks": [d["name"] for d in self.disks()],
            "addresses": [a["name"] for a in self.addresses()],
            "firewalls": [f["name"] for f in self.firewalls()],
            "squids": sorted(self.squids()),
        }
        return {kind: names for kind, names in found.items() if names}

    # ---- what a test does -------------------------------------------------------------

    def inject(
        self,
        method: str,
        fault: str,
        times: int | None = 1,
        zone: str | None = None,
        **params: Any,
    ) -> Fault:
        """The next `times` calls of `method` (None: all, until `clear_faults`), in `zone`
        if given, fail with `fault` (see faults.py; `slow` takes seconds=, `QUOTA_EXCEEDED`
        quota= and limit=)."""
        with self.state.lock:
            return self.state.faults.add(method, fault, times, zone, params)

    def hold(self, method: str, zone: str | None = None) -> Hold:
        """The next call of `method` (in `zone` if given) waits, not yet carried out, until
        `release()` (at most 30 s); `wait_reached()` says when it has arrived."""
        hold = Hold()
        self.inject(method, "hold", 1, zone, hold=hold)
        return hold

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.faults.clear()

    def preempt(self, name: str, zone: str | None = None) -> None:
        """Google reclaims the spot VM `name` (in `zone`, if two zones have one)."""
        self._instances.preempt(name, zone)

    def add_image(self, project: str, name: str, family: str | None = None) -> dict[str, Any]:
        return add_image(self.state, project, name, family)

    def add_address(self, region: str, name: str, labels: dict[str, str] | None = None) -> None:
        """A reserved address, as a leak from an earlier run would leave one."""
        with self.state.lock:
            self.state.check_region(region)
            body = net.address_body(self.state, region, {"name": name, "labels": labels or {}})
            self.state.addresses[(region, name)] = body

    def client_kwargs(self) -> dict[str, Any]:
        """`credentials`, `client_options` and `transport` for any compute_v1 client."""
        return {
            "credentials": AnonymousCredentials(),  # type: ignore[no-untyped-call]
            "client_options": ClientOptions(api_endpoint=self.endpoint),
            "transport": "rest",
        }
