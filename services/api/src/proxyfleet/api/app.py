"""create_app(settings, deps): the Litestar app. Backends open in its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, Router
from litestar.datastructures import State

from proxyfleet.api.container import DEPENDENCIES, build_services
from proxyfleet.api.deps import AppDeps
from proxyfleet.api.fastpath import LeaseFastPath, route_of
from proxyfleet.api.feed.controller import FeedController
from proxyfleet.api.feed.stream import STATE_KEY, EventStreams
from proxyfleet.api.http.allow import point_options_at_final_routes
from proxyfleet.api.http.auth import Scope, TokenAuth
from proxyfleet.api.http.docs_ui import assets_router
from proxyfleet.api.http.errors import EXCEPTION_HANDLERS
from proxyfleet.api.http.openapi import OPENAPI, MsgspecStructSchemas
from proxyfleet.api.http.openapi_headers import document_retry_after
from proxyfleet.api.http.request_metrics import request_metrics_middleware
from proxyfleet.api.leases.controller import LeaseController
from proxyfleet.api.leases.sweeper import run_sweeper
from proxyfleet.api.pools.controller import PoolController
from proxyfleet.api.providers.controller import ProviderController
from proxyfleet.api.providers.entry_controller import ProviderEntryController
from proxyfleet.api.proxies.controller import ProxyController
from proxyfleet.api.settings import ApiSettings
from proxyfleet.api.system.controller import SystemController
from proxyfleet.api.system.echo import echo_router
from proxyfleet.api.ui.controller import ui_router
from proxyfleet.api.usage.controller import UsageController
from proxyfleet.common.observability.logging import get_logger

log = get_logger(__name__)

MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted (413 above): the biggest valid one is a few KiB."""


START_WAIT = 2.0
"""Seconds the start waits for Redis and NATS before serving without them (503s)."""


async def _run_backends(
    app: Litestar, settings: ApiSettings, deps: AppDeps, stop: asyncio.Event, ready: asyncio.Event
) -> None:
    """Open the backends (retried until reached), publish the services on the app's state,
    run the lease sweeper until `stop`, then close everything."""
    async with deps.connect(settings, deps.clock, deps.providers) as backends:
        services = build_services(settings, deps, backends)
        app.state.services = services
        ready.set()
        sweeper = asyncio.create_task(run_sweeper(services.leases, settings.sweep_interval, stop))
        await stop.wait()
        try:
            await asyncio.wait_for(sweeper, 5)
        except TimeoutError:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper


def _log_failure(task: asyncio.Task[None]) -> None:
    """The backends failed after the start (not an outage, which is retried): /readyz
    stays 503 and this says why."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("api.backends_failed", error=repr(exc))


def token_auth(settings: ApiSettings) -> TokenAuth:
    """The bearer-token auth of `settings` (ConfigError when a token is malformed)."""
    return TokenAuth(settings.admin_tokens, settings.client_tokens, insecure=settings.insecure_dev)


class ApiApp(Litestar):
    """The Litestar app, with the grant and release requests it is sure of served by the
    lease fast path (A11 in docs/decisions/api.md); every other request is Litestar's.
    App-level middleware and hooks never see the requests the fast path serves: one added
    here must be added to the fast path too (it mirrors the request-metrics middleware)."""

    fast_path: LeaseFastPath | None = None

    # Any: the ASGI shapes of Litestar's signature are TypedDicts, the fast path's plain
    # mappings (it reads a few keys)
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        fast = self.fast_path
        route = route_of(scope) if fast is not None else None
        if fast is None or route is None:
            await super().__call__(scope, receive, send)
        else:
            await fast.serve(route, scope, receive, send, self._litestar)

    async def _litestar(self, scope: Any, receive: Any, send: Any) -> None:
        await super().__call__(scope, receive, send)


def create_app(settings: ApiSettings, deps: AppDeps) -> Litestar:
    """Raises ConfigError when the settings cannot serve (e.g. no token, not insecure)."""
    settings.check()
    auth = token_auth(settings)
    v1 = Router(
        path="/v1",
        guards=[auth.guard],
        security=[{"bearer": []}],
        route_handlers=[
            ProxyController,
            LeaseController,
            PoolController,
            ProviderController,
            ProviderEntryController,
            FeedController,
            UsageController,
        ],
    )
    handlers: list[Router | type[SystemController]] = [
        v1,
        SystemController,
        echo_router(settings.echo_trusted_proxy),
        assets_router(),
        ui_router(),
    ]

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if settings.insecure_dev:
            log.warning("api.insecure_dev", message="no authentication: every caller is admin")
        else:
            # names only: a token's secret never reaches a log line
            log.info(
                "api.tokens_configured",
                admin=auth.names(Scope.ADMIN),
                client=auth.names(Scope.CLIENT),
            )
        stop, ready = asyncio.Event(), asyncio.Event()
        running = asyncio.create_task(_run_backends(app, settings, deps, stop, ready))
        # A healthy start serves with its backends open; one that cannot reach them serves
        # anyway (/readyz 503, other routes 503 with Retry-After) while they are tried again.
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait(
            {running, waiting}, timeout=START_WAIT, return_when=asyncio.FIRST_COMPLETED
        )
        waiting.cancel()
        if running.done():
            running.result()  # a start that failed (not an outage) fails the server's start
        running.add_done_callback(_log_failure)
        log.info("api.started", host=settings.host, port=settings.port, ready=ready.is_set())
        try:
            yield
        finally:
            stop.set()
            if not ready.is_set():
                running.cancel()  # still trying to connect: nothing to finish
            with contextlib.suppress(Exception, asyncio.CancelledError):  # logged already
                await running

    app = ApiApp(
        route_handlers=handlers,
        dependencies=DEPENDENCIES,
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[request_metrics_middleware],
        lifespan=[lifespan],
        openapi_config=OPENAPI,
        plugins=[MsgspecStructSchemas()],
        logging_config=None,
        request_max_body_size=MAX_BODY_BYTES,
        debug=False,
        state=State({STATE_KEY: EventStreams(keepalive=settings.event_keepalive)}),
    )
    point_options_at_final_routes(app)
    document_retry_after(app)
    app.fast_path = LeaseFastPath(auth, app.state, MAX_BODY_BYTES)
    return app
