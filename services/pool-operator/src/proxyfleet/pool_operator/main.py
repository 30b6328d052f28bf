"""`proxyfleet-pool-operator`: ProxyPool custom resources as Proxyfleet pools, a kopf
operator on the service host (Redis only: the pools store's scripts append their events to
the outbox, which the other services' relays publish)."""

from __future__ import annotations

import kopf

from proxyfleet.common import host
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import PoolStore
from proxyfleet.pool_operator.handlers import register
from proxyfleet.pool_operator.kube import load_access
from proxyfleet.pool_operator.operator import Operator, bridge_kopf_logs
from proxyfleet.pool_operator.reconcile import Reconciler
from proxyfleet.pool_operator.settings import PoolOperatorSettings


def configure(
    common: CommonSettings, s: PoolOperatorSettings, providers: ProvidersConfig
) -> PoolOperatorSettings:
    load_access(s)  # credentials that cannot be read: exit 2 before anything connects
    return s


async def build(ctx: host.Context[PoolOperatorSettings]) -> host.Parts:
    bridge_kopf_logs()
    pools = PoolStore(ctx.redis, ctx.clock, namespace=ctx.common.namespace)
    registry = kopf.OperatorRegistry()
    register(registry, Reconciler(pools, ctx.providers, ctx.clock), ctx.settings)
    operator = Operator(registry, load_access(ctx.settings), ctx.settings)
    return host.Parts(components={"operator": operator.run}, ready={"operator": operator.ready})


SERVICE = host.Service(
    name="pool-operator",
    summary="Reconcile ProxyPool custom resources into Proxyfleet pools (kopf).",
    settings=PoolOperatorSettings,
    build=build,
    needs_nats=False,
    configure=configure,
)


def main() -> None:
    host.main(SERVICE)
