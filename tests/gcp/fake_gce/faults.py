"""Injected faults: what the next N calls of one API method (optionally in one zone) do
instead of succeeding. Pure: no I/O; the state consults it under its lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HTTP_FAULTS = frozenset(
    {"rateLimitExceeded", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "forbidden", "quotaExceeded"}
)
"""Answered at once with an HTTP error; nothing is recorded (the call did not land)."""
OPERATION_FAULTS = frozenset(
    {
        "ZONE_RESOURCE_POOL_EXHAUSTED",
        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
        "QUOTA_EXCEEDED",
        "CONCURRENT_OPERATIONS_QUOTA_EXCEEDED",
    }
)
"""The call is accepted (200, an operation); the operation ends DONE with this error code."""
OTHER_FAULTS = frozenset({"slow", "dropped", "delay", "hold"})
"""`slow`: the operation runs `seconds` longer. `dropped`: the call lands and is recorded,
then the connection closes without an answer (the client sees a connection error).
`delay`: the answer comes `seconds` late (a client timeout shorter than that fires).
`hold`: the call waits, not yet carried out, until the test releases it (`FakeGce.hold`)."""
FAULTS = HTTP_FAULTS | OPERATION_FAULTS | OTHER_FAULTS


@dataclass
class Fault:
    method: str
    kind: str
    remaining: int | None
    """Calls still to hit (None: every call until cleared)."""
    zone: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


class FaultPlan:
    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(
        self, method: str, kind: str, times: int | None, zone: str | None, params: dict[str, Any]
    ) -> Fault:
        if kind not in FAULTS:
            raise ValueError(f"fault {kind!r}: expected one of {sorted(FAULTS)}")
        if times is not None and times < 1:
            raise ValueError("times: expected at least 1 (or None: until cleared)")
        fault = Fault(method, kind, times, zone, dict(params))
        self._faults.append(fault)
        return fault

    def take(self, method: str, zone: str | None) -> Fault | None:
        """The first fault for this call, counted as used."""
        for fault in self._faults:
            if fault.method != method or (fault.zone is not None and fault.zone != zone):
                continue
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining == 0:
                    self._faults.remove(fault)
            return fault
        return None

    def clear(self) -> None:
        self._faults.clear()

    def pending(self) -> list[Fault]:
        return list(self._faults)
