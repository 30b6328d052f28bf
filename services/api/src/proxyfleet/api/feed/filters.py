"""Which events a stream carries, and how each is written as a server-sent event. Pure.

`type` names an event type (`proxy.ready`) or a family (`proxy`, `lease`); none: every
event. A client token sees every `proxy.*` event but only the `lease.*` events of its own
leases: another client's holders and targets are not its business.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.wire.events import EventType

FAMILIES = frozenset(t.value.split(".", 1)[0] for t in EventType)
TYPES = frozenset(t.value for t in EventType)


def parse_types(values: list[str] | None) -> frozenset[str]:
    """The types and families asked for; InvalidInput naming the first unknown one."""
    asked = frozenset(values or ())
    for value in sorted(asked):
        if value not in TYPES and value not in FAMILIES:
            known = ", ".join(sorted(FAMILIES | TYPES))
            raise InvalidInput(
                f"query parameter type: unknown event type {value!r} (one of: {known})",
                code="invalid_event_type",
            )
    return asked


@dataclass(frozen=True, slots=True)
class FeedFilter:
    types: frozenset[str] = frozenset()
    """Event types and families; empty: all."""
    proxy_id: str = ""
    """Only this proxy's events (and probe results); empty: every proxy's."""

    def wants(self, event_type: str, proxy_id: str) -> bool:
        if self.proxy_id and proxy_id != self.proxy_id:
            return False
        if not self.types:
            return True
        return event_type in self.types or event_type.split(".", 1)[0] in self.types


def is_lease_event(event_type: str) -> bool:
    return event_type.startswith("lease.")


def sse(event: str, data: bytes, event_id: str = "") -> bytes:
    """One message; `data` is one line of JSON (msgspec writes no newline into it)."""
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\n".encode() + b"data: " + data + b"\n\n"


KEEPALIVE = b": keep-alive\n\n"
"""A comment line: clients ignore it; idle-connection timeouts of proxies do not fire."""
