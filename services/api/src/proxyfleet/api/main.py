"""proxyfleet-api: the REST API (proxies, leases, providers) as a service of the host."""

from __future__ import annotations

import uvloop

from proxyfleet.api.gctune import tune_gc
from proxyfleet.api.settings import ApiSettings
from proxyfleet.common import host


async def build(ctx: host.Context[ApiSettings]) -> host.Parts:
    # Imported once the configuration is known good (over a second here).
    from proxyfleet.api.app import create_app  # noqa: PLC0415
    from proxyfleet.api.deps import AppDeps  # noqa: PLC0415
    from proxyfleet.api.server import HttpServer  # noqa: PLC0415

    app = create_app(ctx.settings, AppDeps(providers=ctx.providers, clock=ctx.clock))
    tune_gc()
    return host.Parts(components={"http": HttpServer(app, ctx.settings).run})


SERVICE = host.Service(
    name="api",
    summary="Serve the Proxyfleet REST API: proxies, leases, providers, health and metrics.",
    settings=ApiSettings,
    build=build,
    needs_nats=False,  # the app opens its backends in its lifespan and serves its own /readyz
    needs_redis=False,
    configure=lambda _, s, __: s.check(),  # refused before the web stack is imported
    loop=lambda _: uvloop.run,  # with httptools: about twice the requests per core
)


def main() -> None:
    host.main(SERVICE)
