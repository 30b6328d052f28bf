"""The kopf handlers of ProxyPool resources, registered on a registry of their own:

- create, update (of the spec) and resume: declare the pool now (Reconciler.declare) and
  write the status back;
- a timer per resource (--status-interval): the same look again, level-triggered: the
  status follows the pool, and a pool the store lost (a Redis reset) is declared again;
- delete (kopf keeps its finalizer on every ProxyPool meanwhile): ask for the pool's
  delete and hold the resource until the pool is gone, its members drained and deleted
  (annotation proxyfleet.io/keep-proxies: "true" leaves them to the plain fleet instead);
- login: the credentials of kube.py, read again at each (re-)login.

Kubernetes Events are posted for the operator's findings (InvalidSpec, OwnerConflict, ...),
once each time one appears, not for every look."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from proxyfleet.common.logging import get_logger
from proxyfleet.pool_operator import crd
from proxyfleet.pool_operator.kube import load_access
from proxyfleet.pool_operator.reconcile import Outcome, Reconciler
from proxyfleet.pool_operator.settings import PoolOperatorSettings
from proxyfleet.pool_operator.status import READY, merge_patch

KEEP_PROXIES = "proxyfleet.io/keep-proxies"
"""Annotation: "true" on a ProxyPool deletes the pool at once and keeps its members."""
RESOURCE = (crd.GROUP, crd.VERSION, crd.PLURAL)
HANDLER_BACKOFF = 5.0
"""Seconds before a handler that failed (Redis out of reach, ...) runs again."""

log = get_logger("proxyfleet.pool_operator")


def register(
    registry: kopf.OperatorRegistry, reconciler: Reconciler, s: PoolOperatorSettings
) -> None:
    """Put the handlers on `registry`."""

    async def declare(body: kopf.Body, patch: kopf.Patch, cause: str) -> Outcome:
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        previous = body.get("status") or {}
        outcome = await reconciler.declare(
            namespace, name, body.get("spec"), int(meta.get("generation") or 0), previous
        )
        _write_status(patch, previous, outcome.status)
        if outcome.applied:
            log.info("pool_operator.applied", pool=name, resource=f"{namespace}/{name}",
                     cause=cause)  # fmt: skip
            kopf.event(body, type="Normal", reason="Applied", message=f"pool {name} declared")
        seen = _ready_reason(previous)
        if outcome.verdict is not None and outcome.verdict.reason != seen:
            v = outcome.verdict
            log.warning("pool_operator.refused", pool=name, resource=f"{namespace}/{name}",
                        reason=v.reason, message=v.message)  # fmt: skip
            kopf.event(body, type="Warning", reason=v.reason, message=v.message)
        return outcome

    @kopf.on.resume(*RESOURCE, id="declare-on-resume", registry=registry, backoff=HANDLER_BACKOFF)
    async def on_resume(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await declare(body, patch, "resume")

    @kopf.on.create(*RESOURCE, id="declare-on-create", registry=registry, backoff=HANDLER_BACKOFF)
    async def on_create(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await declare(body, patch, "create")

    @kopf.on.update(
        *RESOURCE, id="declare-on-update", field="spec", registry=registry, backoff=HANDLER_BACKOFF
    )
    async def on_update(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await declare(body, patch, "update")

    @kopf.timer(
        *RESOURCE, id="look", interval=s.status_interval, registry=registry, backoff=HANDLER_BACKOFF
    )
    async def on_timer(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await declare(body, patch, "timer")

    @kopf.on.delete(*RESOURCE, id="release", registry=registry, backoff=HANDLER_BACKOFF)
    async def on_delete(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        keep = str((meta.get("annotations") or {}).get(KEEP_PROXIES, "")).lower() == "true"
        previous = body.get("status") or {}
        generation = int(meta.get("generation") or 0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + s.delete_wait
        asked = False
        while True:
            release = await reconciler.release(
                namespace, name, generation, previous, keep_proxies=keep
            )
            if release.gone:
                log.info("pool_operator.released", pool=name, resource=f"{namespace}/{name}",
                         keep_proxies=keep)  # fmt: skip
                return
            if not asked:
                asked = True
                log.info("pool_operator.deleting", pool=name, resource=f"{namespace}/{name}",
                         members=release.members)  # fmt: skip
            if loop.time() >= deadline:
                break
            await asyncio.sleep(s.delete_poll)
        if release.status is not None:
            _write_status(patch, previous, release.status)
        # kopf keeps its finalizer, writes the status, and runs this again after the delay.
        raise kopf.TemporaryError(
            f"pool {name}: {release.members} members left to drain and delete",
            delay=s.delete_poll,
        )

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return load_access(s).connection()


def _write_status(patch: kopf.Patch, current: Any, wanted: dict[str, Any]) -> None:
    """Patch the status only where it changed: an idle pool costs no API writes."""
    diff = merge_patch(dict(current), wanted)
    if diff:
        patch["status"] = {**(patch.get("status") or {}), **diff}


def _ready_reason(status: Any) -> str:
    for c in status.get("conditions") or []:
        if c.get("type") == READY and c.get("status") != "True":
            return str(c.get("reason", ""))
    return ""
