"""What the store tells watches and controllers."""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass, field

from . import errors
from .objects import Json


@dataclass(frozen=True)
class Event:
    type: str
    """ADDED, MODIFIED or DELETED."""
    resource: str
    obj: Json
    rv: int
    old: Json | None = None
    """The object before a MODIFIED event."""

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", ""))

    def seen_as(self, keep: Callable[[Json], bool]) -> str | None:
        """The type a watch with selector `keep` gets this as: a change into the selection
        is ADDED, out of it DELETED (as the API server's watch cache says); None if the
        watch does not see it."""
        now = keep(self.obj)
        if self.type != "MODIFIED" or self.old is None:
            return self.type if now else None
        before = keep(self.old)
        if now:
            return "MODIFIED" if before else "ADDED"
        return "DELETED" if before else None


@dataclass
class Watcher:
    """One open watch: the events after it subscribed, then None when it must end."""

    resource: str
    namespace: str | None
    events: queue.Queue[Event | None] = field(default_factory=queue.Queue)


def watch_since(value: str | None) -> int | None:
    """A watch's `resourceVersion` parameter: None (absent, "" or "0": start with every
    object) or the version to resume after."""
    if value in (None, "", "0"):
        return None
    try:
        return int(str(value))
    except ValueError:
        raise errors.bad_request(f'resourceVersion: Invalid value: "{value}"') from None
