"""One provisioner replica: the intent consumer, the reconciler and the resources responder
on one NATS connection, plus the process around them (signals, health and metrics)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

import nats.errors
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient

from proxyfleet.common.clock import Clock, SystemClock
from proxyfleet.common.logging import get_logger
from proxyfleet.common.messaging import Publisher, connect_nats, ensure_streams
from proxyfleet.common.metrics import serve_health_and_metrics
from proxyfleet.common.provider import Provider
from proxyfleet.common.relay import OutboxRelay
from proxyfleet.common.runner.consumer import IntentConsumer
from proxyfleet.common.runner.handlers import IntentHandler
from proxyfleet.common.runner.reconciler import Reconciler
from proxyfleet.common.runner.resources import ResourcesResponder
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.settings import CommonSettings
from proxyfleet.common.store import ProxyRegistry, connect_redis

log = get_logger("proxyfleet.runner")


class ProvisionerRunner:
    """Everything a provisioner replica runs, on connections it is given (tests build it
    in process; services go through `run_provisioner`)."""

    def __init__(
        self,
        *,
        nc: NatsClient,
        registry: ProxyRegistry,
        provider: Provider,
        settings: RunnerSettings,
        installation_id: str,
        clock: Clock | None = None,
        relay: OutboxRelay | None = None,
    ) -> None:
        """`relay`: publishes the registry's outbox; None builds one on `nc`. A service
        host running one relay per process passes it (or a relay that never relays)."""
        clock = clock or SystemClock()
        self._nc = nc
        self._js = nc.jetstream()
        publisher = Publisher(self._js, clock)
        self.relay = relay or OutboxRelay(
            registry.outbox, nc, service=f"provisioner-{settings.provider}"
        )
        handler = IntentHandler(
            provider=provider,
            registry=registry,
            settings=settings,
            installation_id=installation_id,
            clock=clock,
        )
        self.consumer = IntentConsumer(self._js, handler, settings)
        self.reconciler = Reconciler(
            registry=registry, publisher=publisher, settings=settings, clock=clock
        )
        self.resources = ResourcesResponder(nc, provider, settings.provider)

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set; in-flight intents get shutdown_grace to finish."""
        await ensure_streams(self._js)
        await self.resources.start()
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self.consumer.run(stop))
                tasks.create_task(self.reconciler.run(stop))
                tasks.create_task(self.relay.run(stop))
        finally:
            with contextlib.suppress(nats.errors.Error):  # closed already: nothing to stop
                await self.resources.stop()

    async def ready(self) -> bool:
        return self._nc.is_connected and self.consumer.running and await self.relay.ready()


def run_provisioner(
    common: CommonSettings,
    settings: RunnerSettings,
    make_provider: Callable[[], Provider],
) -> int:
    """Run one provisioner replica until SIGTERM or SIGINT; returns the exit code.

    `make_provider` builds the adapter (called once, inside the event loop).
    """
    return asyncio.run(_serve(common, settings, make_provider))


async def _serve(
    common: CommonSettings, settings: RunnerSettings, make_provider: Callable[[], Provider]
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    provider = make_provider()
    redis = connect_redis(common.redis_url)
    nc: NatsClient | None = None
    try:
        nc = await connect_nats(common.nats_url, name=f"provisioner-{settings.provider}")
        clock = SystemClock()
        runner = ProvisionerRunner(
            nc=nc,
            registry=ProxyRegistry(redis, clock, namespace=common.namespace),
            provider=provider,
            settings=settings,
            installation_id=common.installation_id,
            clock=clock,
        )
        log.info("provisioner starting", provider=settings.provider)
        async with asyncio.TaskGroup() as tasks:
            if settings.metrics_port:
                tasks.create_task(
                    serve_health_and_metrics(
                        settings.metrics_host, settings.metrics_port, runner.ready, stop
                    )
                )
            tasks.create_task(runner.run(stop))
    except Exception:
        log.exception("provisioner stopped on an error", provider=settings.provider)
        return 1
    finally:
        await _close(provider, nc, redis)
    log.info("provisioner stopped", provider=settings.provider)
    return 0


async def _close(provider: Provider, nc: NatsClient | None, redis: aioredis.Redis) -> None:
    with contextlib.suppress(Exception):
        await provider.close()
    if nc is not None:
        with contextlib.suppress(Exception):
            await nc.drain()
    with contextlib.suppress(Exception):
        await redis.aclose()
