"""create_app(settings, deps): the Litestar app. Backends open in its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router

from proxyfleet.api.allow import point_options_at_final_routes
from proxyfleet.api.auth import Scope, TokenAuth
from proxyfleet.api.container import DEPENDENCIES, build_services
from proxyfleet.api.deps import AppDeps
from proxyfleet.api.errors import EXCEPTION_HANDLERS
from proxyfleet.api.leases.controller import LeaseController
from proxyfleet.api.openapi import OPENAPI, MsgspecStructSchemas
from proxyfleet.api.providers.controller import ProviderController
from proxyfleet.api.proxies.controller import ProxyController
from proxyfleet.api.request_metrics import request_metrics_middleware
from proxyfleet.api.settings import ApiSettings
from proxyfleet.api.sweeper import run_sweeper
from proxyfleet.api.system.controller import SystemController
from proxyfleet.common.logging import get_logger

log = get_logger(__name__)

MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted (413 above): the biggest valid one is a few KiB."""


def create_app(settings: ApiSettings, deps: AppDeps) -> Litestar:
    """Raises ConfigError when the settings cannot serve (e.g. no token, not insecure)."""
    settings.check()
    auth = TokenAuth.from_settings(settings)
    v1 = Router(
        path="/v1",
        guards=[auth.guard],
        security=[{"bearer": []}],
        route_handlers=[ProxyController, LeaseController, ProviderController],
    )
    handlers: list[Router | type[SystemController]] = [v1, SystemController]

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
        async with deps.connect(settings, deps.clock) as backends:
            services = build_services(settings, deps, backends)
            app.state.services = services
            stop = asyncio.Event()
            sweeper = asyncio.create_task(
                run_sweeper(services.leases, settings.sweep_interval, stop)
            )
            log.info("api.started", host=settings.host, port=settings.port)
            try:
                yield
            finally:
                stop.set()
                try:
                    await asyncio.wait_for(sweeper, 5)
                except TimeoutError:
                    sweeper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sweeper

    app = Litestar(
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
    )
    point_options_at_final_routes(app)
    return app
