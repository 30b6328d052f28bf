"""The gateway's parts as the host runs them: the endpoint, its lease upkeep, the lease
follower and an outbox relay, on one pipelined Redis connection."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common import host
from proxyfleet.common.messaging.relay import OutboxRelay
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import LeaseStore, PoolStore, ProxyRegistry, ReplicaWait, ScriptMux
from proxyfleet.common.store.client_usage import ClientUsageStore
from proxyfleet.common.store.egress_holds import Exclusivity
from proxyfleet.common.store.sessions import SessionStore
from proxyfleet.gateway.accounting import Accounting
from proxyfleet.gateway.admission import Admission
from proxyfleet.gateway.auth import TokenBook
from proxyfleet.gateway.events import LeaseFollower
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.limits import connection_cap
from proxyfleet.gateway.quota import Quota
from proxyfleet.gateway.quota_sync import QuotaSync
from proxyfleet.gateway.server import Gateway
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.tunnels import Tunnels
from proxyfleet.gateway.upkeep import Upkeep

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Assembly:
    """The gateway's parts, with the endpoint and its tunnels (tests reach them)."""

    gateway: Gateway
    tunnels: Tunnels
    parts: host.Parts
    quota: Quota


def assemble(ctx: host.Context[GatewaySettings]) -> Assembly:
    s, ns = ctx.settings, ctx.common.namespace
    # Every connection runs a grant and a release script: pipelined on one connection
    # (the API's hot path does the same) rather than a pooled connection per call.
    mux = ScriptMux.from_client(ctx.redis, ReplicaWait.of(ctx.common))
    registry = ProxyRegistry(ctx.redis, ctx.clock, namespace=ns, mux=mux)
    # The providers' exclusivity modes, as the API passes them: a gateway grant holds exit
    # addresses exactly as an API grant does.
    exclusivity = Exclusivity.of(ctx.providers)
    policy = s.policy(ctx.common.outbox_high_water)
    store = LeaseStore(ctx.redis, ctx.clock, policy, namespace=ns, mux=mux, exclusivity=exclusivity)
    pools = PoolStore(ctx.redis, ctx.clock, namespace=ns)
    leaser = Leaser(store, registry, SessionStore(ctx.redis, namespace=ns), s, ctx.clock, pools)
    tunnels = Tunnels()
    quota = Quota(s.client_limits(), ctx.clock, tunnels.leases_of)
    accounting = Accounting(quota)
    tunnels.relayed = accounting.relayed
    usage = ClientUsageStore(ctx.redis, namespace=ns)
    quota_sync = QuotaSync(usage, quota, ctx.clock, s.limits_sync_interval, accounting.flush)
    cap = connection_cap(s.max_connections, ctx.open_files)
    log.info("gateway.connection_limit", connections=cap, open_files=ctx.open_files)
    admission = Admission(leaser, TokenBook(s.client_tokens), ctx.providers, tunnels, quota)
    gateway = Gateway(s, leaser, admission, tunnels, cap)
    upkeep = Upkeep(leaser, store, tunnels, s)
    # The lease scripts put their events in the outbox; this replica publishes them too,
    # so they reach NATS whether or not an API runs.
    relay = OutboxRelay(registry.outbox, ctx.nats, service="gateway")
    # While a stopping gateway drains, its connections' leases are still renewed and
    # followed and their releases published: those parts run until it has finished.
    until_finished = gateway.finished
    parts = host.Parts(
        components={
            "proxy": gateway.run,
            "events": lambda _: LeaseFollower(ctx.nats, tunnels).run(until_finished),
            "renewer": lambda _: upkeep.renew(until_finished),
            "sweeper": lambda _: upkeep.sweep(until_finished),
            "relay": lambda _: relay.run(until_finished),
            "limits": lambda _: quota_sync.run(until_finished),
        },
        ready={"proxy": gateway.listening.is_set, "outbox": host.outbox_check(relay)},
        close=[mux.aclose],
    )
    return Assembly(gateway, tunnels, parts, quota)
