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
once each time one appears, not for every look: the handlers and the timer may look at
the same resource at once, before either's status reached it, so the findings already
told are remembered here (seeded from the status after a restart)."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from proxyfleet.common.observability.logging import get_logger
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


class Handlers:
    """What each handler does, with the findings already told (by resource uid)."""

    def __init__(self, reconciler: Reconciler, s: PoolOperatorSettings) -> None:
        self._reconciler = reconciler
        self._settings = s
        self._told: dict[str, str] = {}
        """The finding last told of each resource: its reason, "" for none."""

    async def declare(self, body: kopf.Body, patch: kopf.Patch, cause: str) -> Outcome:
        """Declare the pool (or find why not) and write the status back."""
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        previous = body.get("status") or {}
        outcome = await self._reconciler.declare(
            namespace, name, body.get("spec"), int(meta.get("generation") or 0), previous
        )
        _write_status(patch, previous, outcome.status)
        where = {"pool": name, "resource": f"{namespace}/{name}"}
        if outcome.applied:
            log.info("pool_operator.applied", **where, cause=cause)
            kopf.event(body, type="Normal", reason="Applied", message=f"pool {name} declared")
        uid = str(meta.get("uid", ""))
        seen = self._told.setdefault(uid, _ready_reason(previous))
        self._told[uid] = outcome.verdict.reason if outcome.verdict is not None else ""
        if (v := outcome.verdict) is not None and v.reason != seen:
            log.warning("pool_operator.refused", **where, reason=v.reason, message=v.message)
            kopf.event(body, type="Warning", reason=v.reason, message=v.message)
        return outcome

    async def release(self, body: kopf.Body, patch: kopf.Patch) -> None:
        """Wait (up to --delete-wait) for the pool of a deleted resource to go; then kopf
        removes its finalizer, or writes the status and calls again."""
        s = self._settings
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        keep = str((meta.get("annotations") or {}).get(KEEP_PROXIES, "")).lower() == "true"
        previous = body.get("status") or {}
        generation = int(meta.get("generation") or 0)
        where = {"pool": name, "resource": f"{namespace}/{name}"}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + s.delete_wait
        asked = False
        while True:
            release = await self._reconciler.release(
                namespace, name, generation, previous, keep_proxies=keep
            )
            if release.gone:
                self._told.pop(str(meta.get("uid", "")), None)
                log.info("pool_operator.released", **where, keep_proxies=keep)
                return
            if not asked:
                asked = True
                log.info("pool_operator.deleting", **where, members=release.members)
            if loop.time() >= deadline:
                break
            await asyncio.sleep(s.delete_poll)
        if release.status is not None:
            _write_status(patch, previous, release.status)
        raise kopf.TemporaryError(
            f"pool {name}: {release.members} members left to drain and delete",
            delay=s.delete_poll,
        )


def register(
    registry: kopf.OperatorRegistry, reconciler: Reconciler, s: PoolOperatorSettings
) -> None:
    """Put the handlers on `registry`."""
    h = Handlers(reconciler, s)
    backoff = HANDLER_BACKOFF

    @kopf.on.resume(*RESOURCE, id="declare-on-resume", registry=registry, backoff=backoff)
    async def on_resume(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await h.declare(body, patch, "resume")

    @kopf.on.create(*RESOURCE, id="declare-on-create", registry=registry, backoff=backoff)
    async def on_create(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await h.declare(body, patch, "create")

    @kopf.on.update(
        *RESOURCE, id="declare-on-update", field="spec", registry=registry, backoff=backoff
    )
    async def on_update(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await h.declare(body, patch, "update")

    @kopf.timer(*RESOURCE, id="look", interval=s.status_interval, registry=registry,
                backoff=backoff)  # fmt: skip
    async def on_timer(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await h.declare(body, patch, "timer")

    @kopf.on.delete(*RESOURCE, id="release", registry=registry, backoff=backoff)
    async def on_delete(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        await h.release(body, patch)

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
