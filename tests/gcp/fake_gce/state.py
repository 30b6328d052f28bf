"""The fake's Compute state and its operations: one lock, a ticker thread that moves every
operation PENDING → RUNNING → DONE on its own clock, and a pool for the slow effects
(booting or stopping a Squid) so an operation stays RUNNING until its effect is done.

Handlers (instances.py, others.py) change the state under `lock` and return copies.
"""

from __future__ import annotations

import collections
import copy
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .errors import (
    HTTP_REASON,
    GceError,
    forbidden,
    invalid,
    not_found,
    quota_exceeded,
    rate_limit_exceeded,
    resource_exhausted,
    unavailable,
)
from .faults import OPERATION_FAULTS, Fault, FaultPlan
from .filters import parse_filter
from .op_errors import operation_error
from .resources import Json, link, new_id, now_rfc3339, operation_name, plain_list, region_of
from .settings import Settings

log = logging.getLogger(__name__)

__all__ = ["ComputeState", "Instance", "Operation", "Settings", "raise_for_project"]


@dataclass
class Operation:
    body: Json
    created: float
    pending_s: float
    running_s: float
    effect: Callable[[], object] | None = None
    slow: bool = False
    """The effect runs in the pool, outside the lock (it boots or stops a process)."""
    on_running: Callable[[], None] | None = None
    on_fail: Callable[[], None] | None = None
    error: tuple[int, list[Json]] | None = None
    """An injected failure: HTTP status and `error.errors`, set when the op is DONE."""
    started: bool = False


@dataclass
class Instance:
    """The fake's own record next to the instance's JSON."""

    body: Json
    boot_error: str | None = None
    booted: bool = False


class ComputeState:
    def __init__(self, project: str, zones: list[str], settings: Settings) -> None:
        self.project = project
        self.zones = list(zones)
        self.settings = settings
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.calls: collections.Counter[str] = collections.Counter()
        self.faults = FaultPlan()
        self.operations: dict[str, Operation] = {}
        self.request_ids: dict[str, str] = {}
        self.instances: dict[tuple[str, str], Instance] = {}
        self.disks: dict[tuple[str, str], Json] = {}
        self.firewalls: dict[str, Json] = {}
        self.addresses: dict[tuple[str, str], Json] = {}
        self.images: dict[tuple[str, str], Json] = {}
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="fakegce-effect")
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick_forever, name="fakegce-ticker")
        self._ticker.daemon = True

    @property
    def regions(self) -> list[str]:
        return sorted({region_of(z) for z in self.zones})

    def start(self) -> None:
        self._ticker.start()

    def close(self) -> None:
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join(5)
        self.pool.shutdown(wait=True, cancel_futures=False)

    # ---- calls and faults -------------------------------------------------------------

    def begin(self, method: str, zone: str | None) -> Fault | None:
        """Counts the call and takes its fault; an HTTP fault is raised here."""
        with self.lock:
            self.calls[method] += 1
            fault = self.faults.take(method, zone)
        if fault is None:
            return None
        match fault.kind:
            case "rateLimitExceeded":
                raise rate_limit_exceeded(method, fault.params.get("retry_after"))
            case "RESOURCE_EXHAUSTED":
                raise resource_exhausted(method, fault.params.get("retry_after"))
            case "UNAVAILABLE":
                raise unavailable()
            case "quotaExceeded":
                raise quota_exceeded(
                    str(fault.params.get("quota", "CPUS")),
                    float(fault.params.get("limit", 24.0)),
                    str(fault.params.get("region") or region_of(zone or self.regions[0])),
                )
            case "forbidden":
                raise forbidden(
                    str(fault.params.get("permission", f"compute.{method}")),
                    f"projects/{self.project}",
                )
        return fault

    def check_zone(self, zone: str) -> None:
        if zone not in self.zones:
            raise invalid("zone", zone, "Unknown zone.")

    def check_region(self, region: str) -> None:
        if region not in self.regions:
            raise invalid("region", region, "Unknown region.")

    # ---- operations -------------------------------------------------------------------

    def deduped(self, query: dict[str, str]) -> Json | None:
        """The operation an earlier call with this `requestId` made, if any."""
        request_id = query.get("requestId")
        if request_id is None:
            return None
        try:
            parsed = uuid.UUID(request_id)
        except ValueError:
            parsed = None
        if parsed is None or parsed.int == 0:
            raise invalid("requestId", request_id, "Must be a valid, non-zero UUID.")
        name = self.request_ids.get(str(parsed))
        return self.op_json(name) if name else None

    def new_operation(
        self,
        scope: str,
        op_type: str,
        target_link: str,
        target_id: str,
        query: dict[str, str],
        fault: Fault | None,
        effect: Callable[[], object] | None = None,
        *,
        slow: bool = False,
        on_running: Callable[[], None] | None = None,
        on_fail: Callable[[], None] | None = None,
    ) -> Json:
        name = operation_name()
        body: Json = {
            "kind": "compute#operation",
            "id": new_id(),
            "name": name,
            "operationType": op_type,
            "targetLink": target_link,
            "targetId": target_id,
            "status": "PENDING",
            "user": "fake-gce@proxyfleet.test",
            "progress": 0,
            "insertTime": now_rfc3339(),
            "selfLink": link(self.project, scope, "operations", name),
        }
        if scope.startswith("zones/"):
            body["zone"] = link(self.project, scope)
        elif scope.startswith("regions/"):
            body["region"] = link(self.project, scope)
        op = Operation(
            body=body,
            created=time.monotonic(),
            pending_s=self.settings.pending_s,
            running_s=self.settings.running_s,
            effect=effect,
            slow=slow,
            on_running=on_running,
            on_fail=on_fail,
        )
        if fault is not None:
            if fault.kind == "slow":
                op.running_s += float(fault.params.get("seconds", 5.0))
            elif fault.kind in OPERATION_FAULTS:
                op.error = operation_error(fault, self.project, scope)
        if "requestId" in query:
            self.request_ids[str(uuid.UUID(query["requestId"]))] = name
        self.operations[name] = op
        self._advance(op, time.monotonic())
        return copy.deepcopy(op.body)

    def system_operation(self, scope: str, op_type: str, target_link: str, target_id: str) -> None:
        """An operation Google starts itself (a preemption), already DONE."""
        self.new_operation(scope, op_type, target_link, target_id, {}, None)
        op = self.operations[next(reversed(self.operations))]
        op.body["status"] = "RUNNING"
        self._finish(op)

    def op_json(self, name: str) -> Json:
        return copy.deepcopy(self.operations[name].body)

    def get_operation(self, scope: str, name: str) -> Json:
        with self.lock:
            op = self.operations.get(name)
            if op is None or not op.body["selfLink"].endswith(f"/{scope}/operations/{name}"):
                raise not_found(f"projects/{self.project}/{scope}/operations/{name}")
            return copy.deepcopy(op.body)

    def list_operations(self, scope: str, query: dict[str, str]) -> Json:
        with self.lock:
            match = parse_filter(query.get("filter", ""))
            suffix = f"/{scope}/operations/"
            rows = [
                copy.deepcopy(o.body)
                for o in self.operations.values()
                if suffix in o.body["selfLink"] and match(o.body)
            ]
        return plain_list(self.project, "operation", f"{scope}/operations", rows, query)

    def wait_operation(self, scope: str, name: str) -> Json:
        deadline = time.monotonic() + self.settings.wait_timeout_s
        with self.changed:
            body = self.get_operation(scope, name)
            while body["status"] != "DONE" and (left := deadline - time.monotonic()) > 0:
                self.changed.wait(min(left, 0.05))
                body = self.get_operation(scope, name)
            return body

    # ---- the clock --------------------------------------------------------------------

    def _tick_forever(self) -> None:
        while not self._stop.wait(0.01):
            now = time.monotonic()
            with self.lock:
                for op in list(self.operations.values()):
                    if op.body["status"] != "DONE":
                        self._advance(op, now)

    def _advance(self, op: Operation, now: float) -> None:
        elapsed = now - op.created
        if op.body["status"] == "PENDING" and elapsed >= op.pending_s:
            op.body["status"] = "RUNNING"
            op.body["startTime"] = now_rfc3339()
            if op.on_running is not None and op.error is None:
                op.on_running()
        if op.body["status"] != "RUNNING" or op.started or elapsed < op.pending_s + op.running_s:
            return
        op.started = True
        if op.error is not None:
            if op.on_fail is not None:
                op.on_fail()
            self._finish(op)
        elif op.slow and op.effect is not None:
            self.pool.submit(self._run_slow, op)
        else:
            if op.effect is not None:
                op.effect()
            self._finish(op)

    def _run_slow(self, op: Operation) -> None:
        try:
            assert op.effect is not None
            op.effect()
        except Exception:  # an effect's failure must not leave its operation RUNNING
            log.exception("fake GCE: effect of %s failed", op.body["name"])
        with self.lock:
            self._finish(op)

    def _finish(self, op: Operation) -> None:
        op.body["status"] = "DONE"
        op.body["progress"] = 100
        op.body["endTime"] = now_rfc3339()
        if op.error is not None:
            code, errors = op.error
            op.body["error"] = {"errors": errors}
            op.body["httpErrorStatusCode"] = code
            op.body["httpErrorMessage"] = HTTP_REASON.get(code, "ERROR")
        self.changed.notify_all()


def raise_for_project(state: ComputeState, project: str) -> None:
    if project != state.project:
        raise GceError(404, "notFound", f"The resource 'projects/{project}' was not found")
