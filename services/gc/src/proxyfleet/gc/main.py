"""`proxyfleet-gc`: every interval, ask each provider for its resources and delete orphans."""

from __future__ import annotations

from proxyfleet.common import host
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.gc.collector import Collector
from proxyfleet.gc.once import OneRound
from proxyfleet.gc.settings import ONCE_CONNECT_TIMEOUT, GcSettings


async def build(ctx: host.Context[GcSettings]) -> host.Parts:
    collector = Collector(
        nc=ctx.nats,
        registry=ProxyRegistry(ctx.redis, ctx.clock, namespace=ctx.common.namespace),
        publisher=Publisher(ctx.nats, ctx.clock),
        providers=[p.name for p in ctx.providers.providers],
        installation_id=ctx.common.installation_id,
        settings=ctx.settings,
        clock=ctx.clock,
    )
    if not ctx.settings.once:
        return host.Parts(components={"collector": collector.run_forever})
    one = OneRound(collector)
    return host.Parts(components={"collector": one.run}, exit_code=one.exit_code)


SERVICE = host.Service(
    name="gc",
    summary="Every interval, ask each provider for its resources and delete the orphans.",
    settings=GcSettings,
    build=build,
    connect_timeout=lambda s: ONCE_CONNECT_TIMEOUT if s.once else None,
)


def main() -> None:
    host.main(SERVICE)
