"""`proxyfleet-health`: probe every proxy through itself and keep its health in the registry."""

from __future__ import annotations

import functools

from proxyfleet.common import host
from proxyfleet.common.messaging import Publisher
from proxyfleet.common.settings import CommonSettings
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.health import loops
from proxyfleet.health.prober import Prober
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.worker import HealthWorker


async def build(ctx: host.Context[HealthSettings]) -> host.Parts:
    s = ctx.settings
    prober = Prober(
        s.parsed_target(), timeout=s.timeout, clock=ctx.clock, ssl_context=s.ssl_context()
    )
    worker = HealthWorker(
        s,
        registry=ProxyRegistry(ctx.redis, ctx.clock, namespace=ctx.common.namespace),
        publisher=Publisher(ctx.nats.jetstream(), ctx.clock),
        nc=ctx.nats,
        prober=prober,
        clock=ctx.clock,
        providers=[p.name for p in ctx.providers.providers],
    )

    async def probing() -> bool:
        return worker.ready

    return host.Parts(components={"worker": worker.run}, ready={"worker": probing})


def check_tls(_: CommonSettings, settings: HealthSettings, __: object) -> HealthSettings:
    settings.ssl_context()  # a CA file that cannot be loaded is refused before connecting
    return settings


SERVICE = host.Service(
    name="health",
    summary="Probe every proxy with a real CONNECT and mark it ready or unhealthy.",
    settings=HealthSettings,
    build=build,
    configure=check_tls,
    loop=lambda s: functools.partial(loops.run, loop=s.loop),
)


def main() -> None:
    host.main(SERVICE)
