"""Injected faults, ResourceQuota and the record of every call (what an RBAC test compares
with a Role). Thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from . import errors
from .errors import KubeError

RBAC_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class Call:
    verb: str
    """An RBAC verb (get list watch create update patch delete deletecollection)."""
    resource: str
    """Plural, subresources as "pods/status"; "" for non-resource URLs (/api, /version)."""
    namespace: str
    """"" for a request across all namespaces (or a non-resource URL)."""
    name: str
    code: int
    """The HTTP status answered."""
    group: str = ""
    """The resource's API group ("" for core/v1)."""
    agent: str = ""
    """The client's User-Agent (whose call it was, when several clients share the fake)."""


@dataclass
class Fault:
    kind: str
    """"status" (answer `status`), "delay" (answer `seconds` late) or "disconnect" (close
    the connection unanswered, before the call is carried out or, with `after`, after)."""
    verb: str | None
    resource: str | None
    times: int
    status: int = 0
    retry_after: int | None = None
    reason: str | None = None
    message: str | None = None
    seconds: float = 0.0
    after: bool = False

    def matches(self, verb: str, resource: str) -> bool:
        return self.verb in (None, verb) and self.resource in (None, resource)

    def error(self, verb: str, resource: str, namespace: str, name: str) -> KubeError:
        return errors.from_code(
            self.status,
            verb=verb,
            resource=resource,
            namespace=namespace,
            name=name,
            reason=self.reason,
            message=self.message,
            retry_after=self.retry_after,
        )


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._quotas: dict[str, int] = {}
        self.quota_name = "proxyfleet-quota"
        self.calls: list[Call] = []

    def add(self, fault: Fault) -> None:
        if fault.verb is not None and fault.verb not in RBAC_VERBS:
            raise ValueError(f"verb: expected one of {RBAC_VERBS}, not {fault.verb!r}")
        with self._lock:
            self._faults.append(fault)

    def take(self, verb: str, resource: str) -> Fault | None:
        """The first injected fault due for this call (each counts down its `times`)."""
        with self._lock:
            for fault in self._faults:
                if fault.times > 0 and fault.matches(verb, resource):
                    fault.times -= 1
                    self._faults = [f for f in self._faults if f.times > 0]
                    return fault
        return None

    def clear(self) -> None:
        """Forget every injected fault not yet spent."""
        with self._lock:
            self._faults = []

    def set_quota(self, namespace: str, pods: int | None) -> None:
        with self._lock:
            if pods is None:
                self._quotas.pop(namespace, None)
            else:
                self._quotas[namespace] = pods

    def check_quota(self, namespace: str, name: str, used: int) -> None:
        """403 as the ResourceQuota admission words it, when one more pod is too many."""
        with self._lock:
            limit = self._quotas.get(namespace)
        if limit is not None and used + 1 > limit:
            raise errors.forbidden(
                "pods",
                name,
                f"exceeded quota: {self.quota_name}, requested: pods=1, used: pods={used}, "
                f"limited: pods={limit}",
            )

    def record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def snapshot(self) -> list[Call]:
        with self._lock:
            return list(self.calls)
