"""The garbage collector: deletes dependents whose owners are gone (ownerReferences by
uid), orphans dependents of an owner deleted with the `orphan` finalizer, and finishes a
foreground deletion once the owner's dependents are gone. Level-triggered: every change
wakes it and it looks at everything (fine for a test's hundreds of objects)."""

from __future__ import annotations

import contextlib
import logging
import threading

from .deletion import FOREGROUND, ORPHAN
from .errors import KubeError
from .events import Event
from .objects import Json
from .store import Store

log = logging.getLogger(__name__)


class GarbageCollector:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._dirty = threading.Event()
        self._paused = False
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fakekube-gc", daemon=True)
        store.listeners.append(self._on_event)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        self._dirty.set()
        self._thread.join(5)

    def pause(self) -> None:
        """Collect nothing until `resume` (leftovers for a sweeper's test)."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._dirty.set()

    def _on_event(self, event: Event) -> None:
        self._dirty.set()

    def _loop(self) -> None:
        while not self._closed.is_set():
            self._dirty.wait()
            self._dirty.clear()
            if self._closed.is_set():
                return
            if self._paused:
                continue
            try:
                self.sweep()
            except Exception:
                log.exception("fake kube: garbage collection failed")

    def sweep(self) -> None:
        everything = self.store.all_objects()
        alive = {str(o["metadata"]["uid"]): (r, o) for r, o in everything}
        dependents: dict[str, list[tuple[str, Json]]] = {}
        for resource, obj in everything:
            for ref in obj["metadata"].get("ownerReferences") or []:
                dependents.setdefault(str(ref.get("uid")), []).append((resource, obj))
        for resource, obj in everything:
            meta = obj["metadata"]
            refs = meta.get("ownerReferences") or []
            if refs and not any(str(r.get("uid")) in alive for r in refs):
                self._delete(resource, obj, "Background")
            if "deletionTimestamp" not in meta:
                continue
            finalizers = meta.get("finalizers") or []
            mine = dependents.get(str(meta["uid"]), [])
            if ORPHAN in finalizers:
                for dep_resource, dep in mine:
                    self._orphan(dep_resource, dep, str(meta["uid"]))
                self._finalize(resource, obj, ORPHAN)
            elif FOREGROUND in finalizers:
                if mine:
                    for dep_resource, dep in mine:
                        if "deletionTimestamp" not in dep["metadata"]:
                            self._delete(dep_resource, dep, "Foreground")
                else:
                    self._finalize(resource, obj, FOREGROUND)

    def _delete(self, resource: str, obj: Json, policy: str) -> None:
        meta = obj["metadata"]
        # KubeError: gone already, or replaced by a new object of that name.
        with contextlib.suppress(KubeError):
            self.store.delete(
                resource,
                meta.get("namespace", ""),
                meta["name"],
                {"propagationPolicy": policy, "preconditions": {"uid": meta["uid"]}},
            )

    def _orphan(self, resource: str, obj: Json, owner_uid: str) -> None:
        meta = obj["metadata"]

        def drop(o: Json) -> None:
            if o["metadata"]["uid"] != meta["uid"]:
                return
            refs = [
                r for r in o["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid
            ]
            if refs:
                o["metadata"]["ownerReferences"] = refs
            else:
                o["metadata"].pop("ownerReferences", None)

        self.store.mutate(resource, meta.get("namespace", ""), meta["name"], drop)

    def _finalize(self, resource: str, obj: Json, finalizer: str) -> None:
        meta = obj["metadata"]
        self.store.remove_finalizer(resource, meta.get("namespace", ""), meta["name"], finalizer)
