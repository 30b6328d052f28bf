"""The nodes: run each pod bound to one (scheduler.py) for real. A pod whose container runs
`squid ... -f PATH` gets its configMap, secret and emptyDir volumes as folders here, its
squid.conf rewritten to those folders and to a loopback pod IP of its own (a hostNetwork
pod: its node's address), its traffic to 127/8 sent from its node's address (as a node's
SNAT would), and a real Squid; Ready once the readiness probe's TCP port accepts. Modes
simulate image pull errors, crash loops and OOM kills; `crash`, `oom` and `evict` act on a
running pod. (I/O: threads, files, processes.)"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
import uuid
from pathlib import Path

from tests.loopback_squid.host import LoopbackAddresses, find_squid, make_root

from .events import Event
from .modes import PodMode
from .objects import Json
from .pod_worker import PodWorker
from .scheduler import Scheduler
from .store import Store

log = logging.getLogger(__name__)

PROXY_ID_LABEL = "proxyfleet.io/proxy-id"


class Kubelet:
    def __init__(self, store: Store, addresses: LoopbackAddresses, scheduler: Scheduler) -> None:
        self.store = store
        self.addresses = addresses
        self.scheduler = scheduler
        self.squid = find_squid()
        self.root: Path = make_root("pf-fakekube-")
        # Squid's -n (its shared memory and IPC names) must be alphanumeric and unique.
        self.service_prefix = f"pfk8s{uuid.uuid4().hex[:10]}"
        self.start_delay = 0.0
        """Seconds before a scheduled pod gets its IP and starts."""
        self.backoff = 0.2
        """First restart back-off (doubles, at most 8 times); also ErrImagePull's."""
        self.crash_loop_after = 2
        """Restarts after which a failing container waits in CrashLoopBackOff."""
        self._default_mode = PodMode.RUN
        self._modes: dict[str, PodMode] = {}
        self._lock = threading.Lock()
        self._workers: dict[str, PodWorker] = {}
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._serial = 0
        self._thread = threading.Thread(target=self._dispatch, name="fakekube-kubelet", daemon=True)
        store.listeners.append(self._on_event)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._events.put(None)
        self._thread.join(5)
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for w in workers:
            w.stop()
        for w in workers:
            w.join(10)
        shutil.rmtree(self.root, ignore_errors=True)  # the pods' folders: nothing runs there now

    # ---- the interface tests use -----------------------------------------------------------

    def set_mode(self, mode: PodMode, proxy_id: str | None = None) -> None:
        """How new pods run: every pod's default, or that proxy's pod (label
        proxyfleet.io/proxy-id, or the name pf-<proxy id>)."""
        with self._lock:
            if proxy_id is None:
                self._default_mode = mode
            else:
                self._modes[proxy_id] = mode

    def mode_for(self, pod: Json) -> PodMode:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        with self._lock:
            for proxy_id, mode in self._modes.items():
                if labels.get(PROXY_ID_LABEL) == proxy_id or meta["name"] == f"pf-{proxy_id}":
                    return mode
            return self._default_mode

    def evict(self, namespace: str, name: str) -> None:
        self._worker(namespace, name).command("evict")

    def crash(self, namespace: str, name: str) -> None:
        self._worker(namespace, name).command("crash")

    def oom(self, namespace: str, name: str) -> None:
        self._worker(namespace, name).command("oom")

    def running(self) -> dict[tuple[str, str], int]:
        """(namespace, name) → pid of each Squid running now."""
        with self._lock:
            workers = list(self._workers.values())
        return {(w.namespace, w.name): pid for w in workers if (pid := w.pid()) is not None}

    def logs(self, namespace: str, name: str, tail: int | None = None) -> str | None:
        """The pod's container log (Squid's cache.log and output), None before it ran."""
        try:
            worker = self._worker(namespace, name)
        except LookupError:
            return None
        text = worker.log()
        if text is None:
            return None
        lines = text.splitlines(keepends=True)
        return "".join(lines[-tail:] if tail else lines)

    def pod_address(self, namespace: str, name: str) -> str:
        address = self._worker(namespace, name).address
        if address is None:
            raise LookupError(f"pod {namespace}/{name} has no IP yet")
        return address

    # ---- internals ------------------------------------------------------------------------

    def next_serial(self) -> int:
        with self._lock:
            self._serial += 1
            return self._serial

    def _worker(self, namespace: str, name: str) -> PodWorker:
        with self._lock:
            for w in self._workers.values():
                if (w.namespace, w.name) == (namespace, name):
                    return w
        raise LookupError(f"no pod {namespace}/{name} on the fake node")

    def _on_event(self, event: Event) -> None:
        if event.resource == "pods":
            self._events.put(event)

    def _dispatch(self) -> None:
        while (event := self._events.get()) is not None:
            try:
                self._handle(event)
            except Exception:
                log.exception("fake kubelet: %s failed", event.type)

    def _handle(self, event: Event) -> None:
        meta = event.obj["metadata"]
        uid = str(meta["uid"])
        with self._lock:
            worker = self._workers.get(uid)
        bound = bool(event.obj["spec"].get("nodeName")) and "deletionTimestamp" not in meta
        if event.type in ("ADDED", "MODIFIED") and worker is None and bound:
            worker = PodWorker(self, event.obj, self._forget)
            with self._lock:
                self._workers[uid] = worker
            worker.start()
        elif worker is not None and (event.type == "DELETED" or "deletionTimestamp" in meta):
            worker.stop()

    def _forget(self, uid: str) -> None:
        with self._lock:
            self._workers.pop(uid, None)
