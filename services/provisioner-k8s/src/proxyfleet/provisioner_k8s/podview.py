"""The in-memory view of this installation's pods that creates wait on and the failure
watcher reads: each pod's last known state, the uids of pods deleted lately, and a wake-up
at every change. `PodWatch` keeps it in step with the API; everything here runs on the
event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from proxyfleet.provisioner_k8s.calls import Json
from proxyfleet.provisioner_k8s.pure.pods import PodState, pod_state, sticky

GONE_REMEMBERED = 10_000
"""Uids of deleted pods kept, so a create waiting on a pod deleted meanwhile stops."""


class PodView:
    def __init__(self) -> None:
        self.pods: dict[str, PodState] = {}
        """Pod name -> its last known state (terminating pods included)."""
        self._gone: deque[str] = deque(maxlen=GONE_REMEMBERED)
        self._gone_set: set[str] = set()
        self._changed = asyncio.Event()
        self.on_failure: list[Callable[[PodState], None]] = []
        """Called (on the loop) when a pod's failure reason first appears."""

    def get(self, name: str) -> PodState | None:
        return self.pods.get(name)

    def is_gone(self, uid: str) -> bool:
        return uid in self._gone_set

    async def wait(self, until: Callable[[], bool], within: float) -> bool:
        """Wait until `until()` holds (checked at every change of the view); False after
        `within` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not until():
            left = deadline - loop.time()
            if left <= 0:
                return False
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), left)
        return True

    def replace(self, pods: dict[str, PodState]) -> None:
        """A full list: `pods` is every pod there is now (each made `sticky` already)."""
        for name, old in self.pods.items():
            if name not in pods:
                self._forget(old)
        previous, self.pods = self.pods, pods
        for state in pods.values():
            self._noticed(previous.get(state.name), state)
        self._notify()

    def apply(self, kind: str, obj: Json) -> None:
        """One watch event: ADDED, MODIFIED or DELETED `obj`."""
        previous = self.pods.get(str((obj.get("metadata") or {}).get("name", "")))
        state = sticky(previous, pod_state(obj))
        if kind == "DELETED":
            if previous is not None and previous.uid == state.uid:
                del self.pods[state.name]
            self._forget(state)
        else:
            self.pods[state.name] = state
            self._noticed(previous, state)
        self._notify()

    def _noticed(self, previous: PodState | None, state: PodState) -> None:
        if state.failure and (previous is None or not previous.failure):
            for callback in self.on_failure:
                callback(state)

    def _forget(self, state: PodState) -> None:
        if state.uid and state.uid not in self._gone_set:
            if len(self._gone) == self._gone.maxlen:
                self._gone_set.discard(self._gone[0])
            self._gone.append(state.uid)
            self._gone_set.add(state.uid)

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
