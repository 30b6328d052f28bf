"""kopf, run as the service's one component in the service's own event loop: it waits for
the ProxyPool CRD to be served (not ready meanwhile), then runs the operator until the
service stops.

kopf's settings, and why: standalone (no peering: the handlers are idempotent, so two
replicas acting at once only repeat each other, and no KopfPeering CRD is needed); no
cluster scanning (no cluster-wide read of CRDs or namespaces: the Role is namespaced and
the CRD is there before kopf starts); progress and the last-handled spec kept in
annotations under pools.proxyfleet.io, so the status is the operator's own fields only (a
structural schema would prune kopf's); its own finalizer name; Kubernetes Events only for
what the handlers post themselves, not for every log line (a retry is not news)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from typing import Any

import kopf

from proxyfleet.common.host import Check
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.pool_operator.kube import Access, crd_missing, namespaces
from proxyfleet.pool_operator.settings import PoolOperatorSettings

FINALIZER = "proxyfleet.io/pool"
ANNOTATIONS = "pools.proxyfleet.io"
log = get_logger("proxyfleet.pool_operator")


def kopf_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    settings.scanning.disabled = True
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATIONS)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATIONS, key="last-handled-spec"
    )
    settings.posting.level = logging.CRITICAL  # log lines are not Events; handlers post theirs
    settings.posting.reporting_component = "proxyfleet-pool-operator"
    settings.posting.reporting_instance = socket.gethostname()
    settings.posting.event_name_prefix = "proxyfleet-pool-"
    settings.networking.request_timeout = 30.0
    # The server ends each watch (an integer: the API server refuses "300.0"); kopf resumes.
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    # On stop, kopf gives a timer a few event-loop cycles, then orphans it: one in the middle
    # of its status PATCH then fails on the closed session (an error line at every stop
    # that meets a look). A look takes well under a second: let it finish.
    settings.background.instant_exit_timeout = 5.0
    return settings


class Operator:
    """The component: waits for the CRD, then runs kopf with `registry`."""

    def __init__(
        self, registry: kopf.OperatorRegistry, access: Access, s: PoolOperatorSettings
    ) -> None:
        self._registry = registry
        self._access = access
        self._settings = s
        self._ready = asyncio.Event()
        self._waiting = "not started"

    def ready(self) -> Check:
        if self._ready.is_set():
            return Check(ok=True)
        return Check(ok=False, detail=self._waiting)

    async def run(self, stop: asyncio.Event) -> None:
        served = namespaces(self._settings, self._access)
        if not await self._wait_for_crd(served[0], stop):
            return
        log.info("pool_operator.starting", namespaces=served)
        existing = asyncio.all_tasks()  # kopf cancels what it spawned, not these
        tasks = await kopf.spawn_tasks(
            registry=self._registry,
            settings=kopf_settings(),
            namespaces=served,
            standalone=True,
            stop_flag=stop,
            ready_flag=self._ready,
        )
        _restore_signals(stop)
        await kopf.run_tasks(tasks, ignored=existing)

    async def _wait_for_crd(self, namespace: str, stop: asyncio.Event) -> bool:
        """False when the service stopped first."""
        said = ""
        while not stop.is_set():
            why = await crd_missing(self._access, namespace)
            if not why:
                return True
            self._waiting = why
            if why != said:
                log.warning("pool_operator.waiting", why=why)
                said = why
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._settings.crd_poll)
        return False


def _restore_signals(stop: asyncio.Event) -> None:
    """kopf puts its own SIGINT/SIGTERM handlers on the main thread's loop; the service's
    way comes back: a signal sets the service's stop, which stops kopf (its stop flag) and
    then the rest in the host's order."""
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        first = not stop.is_set()
        stop.set()
        if first:
            log.info("service.stopping", service="pool-operator", signal=sig.name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (RuntimeError, ValueError):  # not the main thread (a test's runner)
            return


def bridge_kopf_logs() -> None:
    """kopf's warnings and errors as structured log lines (`pool_operator.kopf`) like the
    service's own, instead of plain text."""
    logger = logging.getLogger("kopf")
    if any(isinstance(h, _Bridge) for h in logger.handlers):
        return
    logger.addHandler(_Bridge(logging.WARNING))
    logger.propagate = False


EXPECTED = ("Handler 'release' failed temporarily",)
"""kopf's words for a wait the handlers chose (a pool still draining): said at ERROR by
kopf, already logged by the handler as pool_operator.deleting."""


class _Bridge(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(EXPECTED):
            return
        fields: dict[str, Any] = {"kopf_logger": record.name, "message": message}
        ref = getattr(record, "k8s_ref", None)
        if isinstance(ref, dict):
            fields["resource"] = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
        level = record.levelname.lower()
        log_fn = getattr(log, level if level in ("warning", "error", "critical") else "info")
        log_fn("pool_operator.kopf", **fields)
