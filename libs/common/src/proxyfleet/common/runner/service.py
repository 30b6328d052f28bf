"""One provisioner replica: the intent consumer, the reconciler and the resources responder
on one NATS connection; `provisioner_service` declares it to the service host."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from typing import TypeVar

import nats.errors
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host import Context, Parts, Service, outbox_check
from proxyfleet.common.host.spec import Run
from proxyfleet.common.messaging.jetstream import Publisher, ensure_streams
from proxyfleet.common.messaging.relay import OutboxRelay
from proxyfleet.common.providers import ProviderConfig, ProvidersConfig, ProviderType, load_provider
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.runner.adopter import Adopter
from proxyfleet.common.runner.consumer import IntentConsumer
from proxyfleet.common.runner.handlers import IntentHandler
from proxyfleet.common.runner.keyed import KeyedLocks
from proxyfleet.common.runner.lost_watcher import LostWatch
from proxyfleet.common.runner.reconciler import Reconciler
from proxyfleet.common.runner.resources import ResourcesResponder
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.store import ProxyRegistry

R = TypeVar("R", bound=RunnerSettings)
P = TypeVar("P", bound=Provider)
C = TypeVar("C", bound=ProviderConfig)


class ProvisionerRunner:
    """Everything a provisioner replica runs, on connections it is given (tests build it
    in process; services declare `provisioner_service`)."""

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
        stream_replicas: int = 1,
    ) -> None:
        """`relay`: publishes the registry's outbox; None builds one on `nc`. A service
        host running one relay per process passes it (or a relay that never relays).
        `stream_replicas`: as the streams are declared at start (CommonSettings)."""
        self._stream_replicas = stream_replicas
        clock = clock or SystemClock()
        self._nc = nc
        self._js = nc.jetstream()
        publisher = Publisher(nc, clock)
        self.relay = relay or OutboxRelay(
            registry.outbox, nc, service=f"provisioner-{settings.provider}"
        )
        in_hand = KeyedLocks()
        handler = IntentHandler(
            provider=provider,
            registry=registry,
            settings=settings,
            installation_id=installation_id,
            clock=clock,
            in_hand=in_hand,
        )
        self.consumer = IntentConsumer(nc, handler, settings)
        self.reconciler = Reconciler(
            registry=registry, publisher=publisher, settings=settings, clock=clock
        )
        self.resources = ResourcesResponder(nc, provider, settings.provider)
        self.adopter = Adopter(
            registry=registry,
            provider=provider,
            settings=settings,
            installation_id=installation_id,
            clock=clock,
            in_hand=in_hand,
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set; in-flight intents get shutdown_grace to finish."""
        await ensure_streams(self._js, self._stream_replicas)
        await self.resources.start()
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self.consumer.run(stop))
                tasks.create_task(self.reconciler.run(stop))
                tasks.create_task(self.adopter.run(stop))
                tasks.create_task(self.relay.run(stop))
        finally:
            with contextlib.suppress(nats.errors.Error):  # closed already: nothing to stop
                await self.resources.stop()

    async def ready(self) -> bool:
        return self._nc.is_connected and self.consumer.running and await self.relay.ready()


def provisioner_service(
    kind: ProviderType[C],
    what: str,
    make_provider: Callable[[C, Context[R]], P],
    settings: type[R] = RunnerSettings,  # type: ignore[assignment]
    adjust: Callable[[C, R], R] | None = None,
    components: Callable[[P, ProxyRegistry, Context[R]], dict[str, Run]] | None = None,
    lost: LostWatch[P, R] | None = None,
) -> Service[R]:
    """The provisioner `proxyfleet-provisioner-<kind.name>` for the service host; its
    proxies are `what` ("local processes"). `make_provider` builds the adapter from the
    provider's config entry (its type's struct) and the service's context (settings, clock,
    the open Redis client: KVM's replicas share their placement pins there), in the loop;
    `adjust` may change the runner settings from that entry before anything connects
    (raising ConfigError refuses); `components` adds the adapter's own components beside
    the runner (the local provider's supervisor); `lost` adds its lost-resource watcher
    (GCP's spot preemption watcher, the Kubernetes pod failure watcher)."""

    def configure(common: CommonSettings, runner: R, providers: ProvidersConfig) -> R:
        entry = load_provider(common.providers_config, runner.provider, kind.config)
        runner = dataclasses.replace(runner, boot_timeout=entry.boot_timeout)
        return adjust(entry, runner) if adjust else runner

    async def build(ctx: Context[R]) -> Parts:
        entry = ctx.providers.of_type(
            ctx.settings.provider, kind.config, ctx.common.providers_config
        )
        provider = make_provider(entry, ctx)
        registry = ProxyRegistry(
            ctx.redis, ctx.clock, namespace=ctx.common.namespace,
            outbox_high_water=ctx.common.outbox_high_water,
        )  # fmt: skip
        runner = ProvisionerRunner(
            nc=ctx.nats,
            registry=registry,
            provider=provider,
            settings=ctx.settings,
            installation_id=ctx.common.installation_id,
            clock=ctx.clock,
            stream_replicas=ctx.common.stream_replicas,
        )
        extra = components(provider, registry, ctx) if components else {}
        if lost is not None:
            extra[lost.component] = lost.build(provider, registry, ctx.settings).run
        return Parts(
            components={"runner": runner.run, **extra},
            ready={"runner": runner.ready, "outbox": outbox_check(runner.relay)},
            close=[provider.close],
        )

    return Service(
        name=f"provisioner-{kind.name}",
        summary=f"Create and delete this provider's proxies as {what}.",
        settings=settings,
        build=build,
        configure=configure,
    )
