"""One pod watch per provisioner: keeps the `PodView` of this installation's pods in step
with the API.

List (paged), then watch from the list's resourceVersion; a watch that ends (its timeout,
a dropped connection) is resumed from the last resourceVersion seen; 410 Gone (that
version is compacted away) lists again. A full relist also runs every `relist_interval`
as a safety net, and the runner's level-triggered reconciler catches whatever the view
still missed. The stream is read in a thread of its own (it blocks for minutes); events
are applied on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import ProviderError, TemporaryProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import Kind, failure_kind
from proxyfleet.provisioner_k8s.calls import Kube
from proxyfleet.provisioner_k8s.metrics import WATCH_EVENTS, WATCH_RESTARTS
from proxyfleet.provisioner_k8s.podview import PodView
from proxyfleet.provisioner_k8s.pure.classify import ApiFailure, classify
from proxyfleet.provisioner_k8s.pure.pods import PodState, pod_state, sticky

log = get_logger("proxyfleet.k8s")
LIST_PAGE = 500
BACKOFF_MAX = 10.0


class PodWatch(PodView):
    """The view, kept in step by one list-then-watch (`start` it; `close` ends it)."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        selector: str,
        clock: Clock,
        *,
        watch_timeout: float,
        relist_interval: float,
        request_timeout: float,
    ) -> None:
        super().__init__()
        self._kube = kube
        self._namespace = namespace
        self._selector = selector
        self._clock = clock
        self._watch_timeout = watch_timeout
        self._relist_interval = relist_interval
        self._request_timeout = request_timeout
        self._synced = asyncio.Event()
        self._first_error: ProviderError | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="k8s-watch")
        self._resp: Any = None
        self._rv = ""
        self._closed = False

    # ---- what callers use -------------------------------------------------------------

    async def start(self, within: float) -> None:
        """Start the watch once; return when the first list is in the view. A failing
        first list is raised (temporary or permanent), and tried again on the next call."""
        if self._task is None or self._task.done():
            self._first_error = None
            self._synced.clear()
            self._task = asyncio.create_task(self._run(), name="k8s-pod-watch")
        if self._synced.is_set():
            return
        waiter = asyncio.ensure_future(self._synced.wait())
        try:
            await asyncio.wait({waiter, self._task}, timeout=within,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        finally:
            waiter.cancel()
        if self._synced.is_set():
            return
        if self._first_error is not None:
            raise self._first_error
        raise TemporaryProviderError(f"list pods: no answer within {within:g} s")

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def close(self) -> None:
        self._closed = True
        self._interrupt()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._thread.shutdown(wait=False, cancel_futures=True)

    def drop(self) -> None:
        """End the current watch request (tests: a connection the network dropped)."""
        self._interrupt()

    # ---- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = 0.5
        last_list = float("-inf")
        while not self._closed:
            try:
                if not self._rv or self._clock.now() - last_list >= self._relist_interval:
                    if self._rv:
                        WATCH_RESTARTS.labels("relist").inc()
                    await self._list()
                    last_list = self._clock.now()
                left = self._relist_interval - (self._clock.now() - last_list)
                seconds = max(1, int(min(self._watch_timeout, left)))
                await self._watch(seconds)
                WATCH_RESTARTS.labels("ended").inc()
                backoff = 0.5
            except ProviderError as exc:
                if failure_kind(exc) is Kind.GONE:
                    log.info("k8s.watch_gone", resource_version=self._rv)
                    WATCH_RESTARTS.labels("gone").inc()
                    self._rv = ""
                    continue
                if not self._synced.is_set():
                    self._first_error = exc
                    return  # start() raises it; the next start() tries again
                WATCH_RESTARTS.labels("error").inc()
                log.warning("k8s.watch_failed", error=str(exc), retry_in=backoff)
                await asyncio.sleep(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)

    async def _list(self) -> None:
        pods: dict[str, PodState] = {}
        token = ""
        rv = ""
        while True:
            kw: dict[str, Any] = {"label_selector": self._selector, "limit": LIST_PAGE}
            if token:
                kw["_continue"] = token
            doc = await self._kube.call(
                "list", "pods", self._kube.core.list_namespaced_pod, self._namespace, **kw
            )
            meta = doc.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion", ""))
            for item in doc.get("items") or []:
                state = pod_state(item)
                pods[state.name] = sticky(self.pods.get(state.name), state)
            token = str(meta.get("continue") or "")
            if not token:
                break
        self.replace(pods)
        self._rv = rv
        self._synced.set()

    async def _watch(self, seconds: int) -> None:
        loop = asyncio.get_running_loop()
        timeout = (self._request_timeout, seconds + self._request_timeout)

        def stream() -> None:
            try:
                resp: Any = self._kube.core.list_namespaced_pod(
                    self._namespace,
                    label_selector=self._selector,
                    watch=True,
                    allow_watch_bookmarks=True,
                    resource_version=self._rv,
                    timeout_seconds=seconds,
                    _preload_content=False,
                    _request_timeout=timeout,
                )
            except Exception as exc:
                raise self._kube.calls.translate(("watch", "pods"), exc) from None
            self._resp = resp
            try:
                for line in _lines(resp):
                    self._event(line, loop)
            except ProviderError:
                raise
            except Exception as exc:  # the connection dropped mid-stream: resume
                if self._closed:
                    return
                log.info("k8s.watch_dropped", error=type(exc).__name__)
            finally:
                self._resp = None
                with contextlib.suppress(Exception):
                    resp.release_conn()

        self._kube.calls.count_call(("watch", "pods"))
        await loop.run_in_executor(self._thread, stream)

    def _event(self, line: str, loop: asyncio.AbstractEventLoop) -> None:
        """One line of the stream (in the watch thread)."""
        try:
            event = json.loads(line)
        except ValueError:
            return
        kind = str(event.get("type", ""))
        obj = event.get("object") or {}
        WATCH_EVENTS.labels(kind or "unknown").inc()
        if kind == "ERROR":
            code = obj.get("code")
            failure = ApiFailure(
                status=int(code) if isinstance(code, int) else 500,
                reason=str(obj.get("reason", "")),
                message=str(obj.get("message", "")),
            )
            raise self._kube.calls.failed(("watch", "pods"), classify(failure, "watch pods"))
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if rv:
            self._rv = rv
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            loop.call_soon_threadsafe(self.apply, kind, obj)

    def _interrupt(self) -> None:
        resp = self._resp
        if resp is not None:
            with contextlib.suppress(Exception):
                resp.shutdown()


def _lines(resp: Any) -> Iterator[str]:
    buffer = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line.decode("utf-8", errors="replace")
    if buffer.strip():
        yield buffer.decode("utf-8", errors="replace")
