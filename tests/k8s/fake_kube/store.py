"""The API server's storage: objects by (resource, namespace, name), one resourceVersion
counter for all of them (as etcd's revision), the event history watches resume from, and
the deletion rules (finalizers, deletionTimestamp, a pod kept until its kubelet let go).

Thread-safe: every method takes `lock`. Listeners (the kubelet, the garbage collector, the
service controller) are called under it and must only enqueue work.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable

from . import deletion, errors, objects, validation
from .events import Event, Watcher
from .kinds import FieldValidation, Kind, core_kinds
from .objects import Json

HISTORY_LIMIT = 10_000
"""Events kept for resuming watches; older resourceVersions get 410 Gone."""

Key = tuple[str, str, str]
"""(resource, namespace, name)."""


class Store:
    def __init__(self, now: Callable[[], float] = time.time, first_rv: int = 1000) -> None:
        self.lock = threading.RLock()
        self.now = now
        self._rv = first_rv
        self._objects: dict[Key, Json] = {}
        self._history: deque[Event] = deque()
        self.compacted_rv = first_rv
        """Watches from a resourceVersion older than this get 410 Gone."""
        self.history_limit = HISTORY_LIMIT
        self._watchers: list[Watcher] = []
        self.listeners: list[Callable[[Event], None]] = []
        self.on_create: list[Callable[[str, Json], None]] = []
        """Called with each new object before it is stored (allocators); may raise."""
        self._released: set[str] = set()
        """uids of pods whose kubelet has stopped them (they may leave the store)."""
        self.kinds: dict[str, Kind] = core_kinds()
        """What each resource is (custom resources come and go with their CRDs)."""

    def kind(self, resource: str) -> Kind:
        if (found := self.kinds.get(resource)) is None:
            raise errors.not_found(resource, "")
        return found

    # ---- reads ----------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def get(self, resource: str, namespace: str, name: str) -> Json:
        with self.lock:
            obj = self._objects.get((resource, namespace, name))
            if obj is None:
                raise errors.not_found(resource, name)
            return copy.deepcopy(obj)

    def find(self, resource: str, namespace: str, name: str) -> Json | None:
        with self.lock:
            obj = self._objects.get((resource, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list_objects(
        self,
        resource: str,
        namespace: str | None,
        keep: Callable[[Json], bool] = lambda _: True,
    ) -> tuple[list[Json], int]:
        """Matching objects sorted by namespace and name, and the current resourceVersion."""
        with self.lock:
            items = [
                copy.deepcopy(o)
                for (r, ns, _), o in sorted(self._objects.items())
                if r == resource and (namespace is None or ns == namespace) and keep(o)
            ]
            return items, self._rv

    def all_objects(self) -> list[tuple[str, Json]]:
        with self.lock:
            return [(r, copy.deepcopy(o)) for (r, _, _), o in sorted(self._objects.items())]

    # ---- writes ---------------------------------------------------------------------------

    def create(
        self, resource: str, namespace: str, body: Json, fv: FieldValidation | None = None
    ) -> Json:
        kind = self.kind(resource)
        if (missing := validation.require_name(kind.kind, body)) is not None:
            raise missing
        meta = body.get("metadata") or {}
        with self.lock:
            name = str(meta.get("name") or "")
            if not name:
                name = self._generate_name(resource, namespace, str(meta["generateName"]))
            uid, now, fv = str(uuid.uuid4()), self.now(), fv or FieldValidation()
            obj = kind.prepare(namespace, body, name=name, uid=uid, now=now, fv=fv)
            if (resource, namespace, name) in self._objects:
                raise errors.already_exists(resource, name)
            for hook in self.on_create:
                hook(resource, obj)
            self._store(resource, obj, "ADDED")
            return copy.deepcopy(obj)

    def update(
        self,
        resource: str,
        namespace: str,
        name: str,
        body: Json,
        subresource: str = "",
        fv: FieldValidation | None = None,
    ) -> Json:
        """A PUT (or a patched object): 409 Conflict when its resourceVersion is stale."""
        kind = self.kind(resource)
        with self.lock:
            current = self._objects.get((resource, namespace, name))
            if current is None:
                raise errors.not_found(resource, name)
            validation.check_put(resource, name, current, body)
            new = kind.merge(current, body, subresource, fv or FieldValidation())
            kind.check_update(name, current, new, subresource)
            deletion.check_no_new_finalizers(kind.kind, current, new)
            return self._replace(resource, current, new)

    def mutate(
        self, resource: str, namespace: str, name: str, change: Callable[[Json], None]
    ) -> Json | None:
        """Change an object in place as a controller does (no resourceVersion check);
        None if it is gone."""
        with self.lock:
            current = self._objects.get((resource, namespace, name))
            if current is None:
                return None
            new = copy.deepcopy(current)
            change(new)
            return self._replace(resource, current, new)

    def delete(self, resource: str, namespace: str, name: str, options: Json) -> Json:
        """The answer to a DELETE: the object (pods, services) or a Status."""
        with self.lock:
            current = self._objects.get((resource, namespace, name))
            if current is None:
                raise errors.not_found(resource, name)
            deletion.check_preconditions(resource, current, options)
            meta = current["metadata"]
            new = copy.deepcopy(current)
            finalizers = deletion.finalizers_for(
                meta.get("finalizers") or [], deletion.policy(options)
            )
            if finalizers:
                new["metadata"]["finalizers"] = finalizers
            grace = deletion.grace_seconds(options, current) if resource == "pods" else 0
            if grace == 0 and resource == "pods":
                self._released.add(meta["uid"])  # forced (or finished): gone at once
            kept = finalizers or (resource == "pods" and meta["uid"] not in self._released)
            if kept:
                if "deletionTimestamp" not in meta:
                    new["metadata"]["deletionTimestamp"] = objects.rfc3339(self.now() + grace)
                    new["metadata"]["deletionGracePeriodSeconds"] = grace
                answer = self._replace(resource, current, new)
            else:
                answer = self._remove(resource, current)
            shown = self.kind(resource).delete_answer(answer, removed=not kept)
            return shown if shown is not None else deletion.success(resource, meta)

    def drop_all(self, resource: str) -> None:
        """Remove every object of `resource` at once, finalizers or not (its CRD is gone)."""
        with self.lock:
            for (r, _, _), obj in sorted(self._objects.items()):
                if r == resource:
                    self._remove(resource, obj)

    def release_pod(self, namespace: str, name: str, uid: str) -> None:
        """The kubelet has stopped the pod: once deleted (and finalized) it may go."""
        with self.lock:
            self._released.add(uid)
            current = self._objects.get(("pods", namespace, name))
            if current is not None and current["metadata"]["uid"] == uid:
                self._maybe_remove("pods", current)

    def remove_finalizer(self, resource: str, namespace: str, name: str, finalizer: str) -> None:
        def drop(obj: Json) -> None:
            left = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
            if left:
                obj["metadata"]["finalizers"] = left
            else:
                obj["metadata"].pop("finalizers", None)

        self.mutate(resource, namespace, name, drop)

    # ---- watches --------------------------------------------------------------------------

    def watch(
        self, resource: str, namespace: str | None, since: int | None, keep: Callable[[Json], bool]
    ) -> tuple[Watcher, list[Event]]:
        """A subscription and the events it starts with: every object as ADDED when `since`
        is None (or 0), else the history after `since` (410 Gone when that is forgotten)."""
        with self.lock:
            if since is None:
                first = [
                    Event("ADDED", resource, o, int(o["metadata"]["resourceVersion"]))
                    for o in self.list_objects(resource, namespace, keep)[0]
                ]
            else:
                if since < self.compacted_rv:
                    raise errors.expired(f"too old resource version: {since} ({self.compacted_rv})")
                first = [
                    Event(seen, e.resource, e.obj, e.rv)
                    for e in self._history
                    if e.rv > since
                    and e.resource == resource
                    and (namespace is None or e.namespace == namespace)
                    and (seen := e.seen_as(keep)) is not None
                ]
            watcher = Watcher(resource, namespace)
            self._watchers.append(watcher)
            return watcher, first

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def drop_watches(self) -> int:
        with self.lock:
            dropped = list(self._watchers)
            self._watchers.clear()
        for w in dropped:
            w.events.put(None)
        return len(dropped)

    def compact(self) -> None:
        with self.lock:
            self._history.clear()
            self.compacted_rv = self._rv

    # ---- internals ------------------------------------------------------------------------

    def _generate_name(self, resource: str, namespace: str, prefix: str) -> str:
        for _ in range(100):
            name = prefix + uuid.uuid4().hex[:5]
            if (resource, namespace, name) not in self._objects:
                return name
        raise errors.already_exists(resource, prefix)

    def _replace(self, resource: str, current: Json, new: Json) -> Json:
        if new == current:
            return copy.deepcopy(current)
        if not new["metadata"].get("finalizers"):
            new["metadata"].pop("finalizers", None)
        self._store(resource, new, "MODIFIED", current)
        self._maybe_remove(resource, new)
        return copy.deepcopy(new)

    def _maybe_remove(self, resource: str, obj: Json) -> None:
        meta = obj["metadata"]
        if "deletionTimestamp" not in meta or meta.get("finalizers"):
            return
        if resource == "pods" and meta["uid"] not in self._released:
            return
        self._remove(resource, obj)

    def _remove(self, resource: str, obj: Json) -> Json:
        meta = obj["metadata"]
        self._objects.pop((resource, meta.get("namespace", ""), meta["name"]), None)
        self._released.discard(meta["uid"])
        gone = copy.deepcopy(obj)
        self._rv += 1
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._emit(Event("DELETED", resource, gone, self._rv))
        return copy.deepcopy(gone)

    def _store(self, resource: str, obj: Json, kind: str, old: Json | None = None) -> None:
        self._rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        self._objects[(resource, meta.get("namespace", ""), meta["name"])] = obj
        # `old` left the store and nobody changes it any more: no copy needed.
        self._emit(Event(kind, resource, copy.deepcopy(obj), self._rv, old))

    def _emit(self, event: Event) -> None:
        self._history.append(event)
        while len(self._history) > self.history_limit:
            self.compacted_rv = self._history.popleft().rv
        for w in self._watchers:
            if w.resource == event.resource and w.namespace in (None, event.namespace):
                w.events.put(event)
        for listener in self.listeners:
            listener(event)
