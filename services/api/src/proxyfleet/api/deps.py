"""The API's ports: what it needs from the outside, opened once per process in the lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

from nats.aio.client import Client as NatsClient

from proxyfleet.api.settings import ApiSettings
from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.host.connect import nats_with_streams, redis_reachable
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.messaging.relay import OutboxRelay
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import (
    LeaseStore,
    PoolStore,
    ProviderEntries,
    ProxyRegistry,
    ReplicaWait,
    ScriptMux,
    connect_redis,
)
from proxyfleet.common.store.client_usage import ClientUsageStore
from proxyfleet.common.store.egress_holds import Exclusivity
from proxyfleet.common.store.lease_terms import LeasePolicy

READINESS_TIMEOUT = 1.0


@dataclass(frozen=True, slots=True)
class Backends:
    """Open connections and the stores built on them."""

    registry: ProxyRegistry
    leases: LeaseStore
    pools: PoolStore
    entries: ProviderEntries
    """Proxies admins added to providers at run time."""
    publisher: Publisher
    relay: OutboxRelay
    """Publishes the outbox the lease and registry scripts append to."""
    ping_redis: Callable[[], Awaitable[object]]
    nats: NatsClient
    usage: ClientUsageStore
    """Each client's bytes and connections per day, as the gateways sync them."""

    async def redis_ready(self) -> bool:
        try:
            await asyncio.wait_for(self.ping_redis(), READINESS_TIMEOUT)
        except (StoreUnavailable, TimeoutError):
            return False
        return True

    def nats_ready(self) -> bool:
        return bool(self.nats.is_connected)


Connector = Callable[[ApiSettings, Clock, ProvidersConfig], AbstractAsyncContextManager[Backends]]


@asynccontextmanager
async def open_backends(
    settings: ApiSettings, clock: Clock, providers: ProvidersConfig
) -> AsyncIterator[Backends]:
    """Reach Redis and NATS (each tried with backoff until it answers, see
    `proxyfleet.common.host.connect`), declare the streams, run the outbox relay; on exit
    stop the relay (it publishes what is left for up to 2 s; the rest waits in the outbox
    for another replica) and close both. `providers`: their exclusivity modes, which every
    grant passes to the grant script."""
    common = settings.common
    redis = connect_redis(common.redis_url)
    try:
        await redis_reachable("api", common.redis_url, redis)
        nc = await nats_with_streams("api", common.nats_url, common.stream_replicas)
        try:
            policy = LeasePolicy(
                cooldown=settings.cooldown,
                max_ttl=settings.max_lease_ttl,
                ban_seconds=settings.ban_seconds,
                max_probe_age=settings.max_probe_age,
                outbox_high_water=common.outbox_high_water,
            )
            # The lease and registry scripts of the request path share one pipelined
            # connection (ScriptMux).
            mux = ScriptMux.from_client(redis, ReplicaWait.of(common))
            registry = ProxyRegistry(
                redis, clock, namespace=common.namespace, mux=mux,
                outbox_high_water=common.outbox_high_water,
            )  # fmt: skip
            exclusivity = Exclusivity.of(providers)
            leases = LeaseStore(
                redis, clock, policy, namespace=common.namespace, mux=mux, exclusivity=exclusivity
            )
            relay = OutboxRelay(registry.outbox, nc, service="api")
            stop_relay = asyncio.Event()
            relaying = asyncio.create_task(relay.run(stop_relay))
            try:
                yield Backends(
                    relay=relay,
                    registry=registry,
                    leases=leases,
                    pools=PoolStore(redis, clock, namespace=common.namespace),
                    entries=ProviderEntries(redis, namespace=common.namespace),
                    # One attempt: a request never waits on NATS (the client may retry).
                    publisher=Publisher(nc, clock, attempts=1),
                    ping_redis=registry.ping,
                    nats=nc,
                    usage=ClientUsageStore(redis, namespace=common.namespace, clock=clock),
                )
            finally:
                stop_relay.set()
                await relaying
                await mux.aclose()
        finally:
            await nc.close()
    finally:
        await redis.aclose()


@dataclass(frozen=True, slots=True)
class AppDeps:
    """Everything create_app needs besides settings; built once (in main or a test)."""

    providers: ProvidersConfig
    """The parsed providers config (load_providers_config)."""
    clock: Clock = field(default_factory=SystemClock)
    """Time source of leases, cooldowns and events (ManualClock in tests)."""
    connect: Connector = open_backends
    """Opens the backends for the app's lifespan."""
