"""`proxyfleet-health`: probe every proxy through itself and keep its health in the registry."""

from __future__ import annotations

import functools

from proxyfleet.common import host
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.health import loops
from proxyfleet.health.prober import Prober
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.worker import HealthWorker


async def build(ctx: host.Context[HealthSettings]) -> host.Parts:
    s = ctx.settings
    prober = Prober(
        s.parsed_target(),
        timeout=s.timeout,
        clock=ctx.clock,
        ssl_context=s.ssl_context(),
        proxy_ssl_context=s.proxy_ssl_context(),
    )
    namespace = ctx.common.namespace
    worker = HealthWorker(
        s,
        registry=ProxyRegistry(ctx.redis, ctx.clock, namespace=namespace),
        egress=EgressStore(ctx.redis, ctx.clock, namespace=namespace),
        nc=ctx.nats,
        prober=prober,
        clock=ctx.clock,
        providers=[p.name for p in ctx.providers.providers],
        require_ip=[p.name for p in ctx.providers.providers if p.egress.require_ip],
    )
    return host.Parts(
        components={"worker": worker.run},
        ready={"worker": lambda: worker.ready, "outbox": host.outbox_check(worker.relay)},
    )


SERVICE = host.Service(
    name="health",
    summary="Probe every proxy with a real CONNECT and mark it ready or unhealthy.",
    settings=HealthSettings,
    build=build,
    configure=lambda _, s, __: s.with_tls_checked(),  # a bad CA file: refused before connecting
    loop=lambda s: functools.partial(loops.run, loop=s.loop),
)


def main() -> None:
    host.main(SERVICE)
