"""`proxyfleet-pools`: keep every declared pool of proxies true (replace, recycle,
autoscale, quarantine), one active replica per pool."""

from __future__ import annotations

from proxyfleet.common import host
from proxyfleet.common.messaging.relay import OutboxRelay
from proxyfleet.common.observability.replica import replica_name
from proxyfleet.common.store import Locks, PoolStore, ProxyRegistry
from proxyfleet.pools.config_pools import ConfigPools
from proxyfleet.pools.controller import PoolController
from proxyfleet.pools.settings import PoolsSettings


async def build(ctx: host.Context[PoolsSettings]) -> host.Parts:
    ns = ctx.common.namespace
    registry = ProxyRegistry(
        ctx.redis, ctx.clock, namespace=ns, outbox_high_water=ctx.common.outbox_high_water
    )
    pools = PoolStore(ctx.redis, ctx.clock, namespace=ns)
    config = None
    if ctx.settings.apply_config:
        config = ConfigPools(pools, ctx.providers.pools, ctx.common.providers_config)
    controller = PoolController(
        pools=pools,
        registry=registry,
        locks=Locks(ctx.redis, namespace=ns),
        providers=ctx.providers,
        settings=ctx.settings,
        clock=ctx.clock,
        replica=replica_name("pools"),
        config_pools=config,
    )
    # Its creates, drains and pool events go through the outbox: publish them itself, not
    # only when another service's relay runs.
    relay = OutboxRelay(registry.outbox, ctx.nats, service="pools", clock=ctx.clock)
    return host.Parts(
        components={"controller": controller.run, "relay": relay.run},
        ready={"outbox": host.outbox_check(relay)},
    )


SERVICE = host.Service(
    name="pools",
    summary="Keep every declared pool of proxies true: replace, recycle, autoscale, quarantine.",
    settings=PoolsSettings,
    build=build,
)


def main() -> None:
    host.main(SERVICE)
