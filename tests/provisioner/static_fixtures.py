"""Fixtures of the static provisioner's in-process tests: the runner with the static
adapter and the syncer beside it, a recorder of every event published, an entry parsed
from the providers file."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.store import PoolStore, ProviderEntries, ProxyRegistry
from proxyfleet.common.wire.events import Event, EventType
from proxyfleet.common.wire.models import Scheme
from proxyfleet.provisioner_static.adapter import StaticProvider
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig
from proxyfleet.provisioner_static.pure.lines import entry_id, parse_line
from proxyfleet.provisioner_static.settings import StaticProvisionerSettings
from proxyfleet.provisioner_static.syncer import Syncer

from .conftest import RunnerFactory
from .helpers import fast_settings


class Events:
    """Every event published since the fixture started, and their raw bodies."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.raw: list[bytes] = []

    async def on_msg(self, msg: Msg) -> None:
        self.raw.append(msg.data)
        self.events.append(event_decoder.decode(msg.data))

    def types_of(self, proxy_id: str) -> list[str]:
        return [e.type for e in self.events if e.proxy_id == proxy_id]

    def of_type(self, kind: EventType) -> list[Event]:
        return [e for e in self.events if e.type is kind]


@pytest.fixture
async def events(nc: NatsClient) -> AsyncIterator[Events]:
    recorder = Events()
    sub = await nc.subscribe("proxyfleet.events.>", cb=recorder.on_msg)
    await nc.flush()
    yield recorder
    await sub.unsubscribe()


def static_entry(name: str, static: str) -> StaticProviderConfig:
    text = f"providers:\n  - name: {name}\n    type: static\n    zones: [z1]\n    static:\n"
    text += "".join(f"      {line}\n" for line in static.strip().splitlines())
    return parse_providers_config(text, "providers.yaml").get(name, StaticProviderConfig)


def sync_settings(provider: str) -> StaticProvisionerSettings:
    base = dataclasses.asdict(fast_settings(provider))
    return StaticProvisionerSettings(**base, sync_interval=0.1)


StartStatic = Callable[[StaticProviderConfig], Awaitable[Syncer]]


@pytest.fixture
async def start_static(
    start_runner: RunnerFactory, registry: ProxyRegistry, redis_client: aioredis.Redis
) -> AsyncIterator[StartStatic]:
    """The runner with the static adapter and the syncer beside it, both stopped after."""
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def start(entry: StaticProviderConfig) -> Syncer:
        settings = sync_settings(entry.name)
        await start_runner(StaticProvider(entry), settings)
        clock = SystemClock()
        syncer = Syncer(
            entry,
            registry=registry,
            pools=PoolStore(redis_client, clock),
            entries=ProviderEntries(redis_client),
            settings=settings,
            clock=clock,
        )
        tasks.append(asyncio.create_task(syncer.run(stop)))
        return syncer

    yield start
    stop.set()
    for task in tasks:
        await asyncio.wait_for(task, 10)


def line_id(provider: str, text: str, scheme: Scheme = Scheme.HTTP) -> str:
    """The proxy id of a source's line (`scheme`: the source's, for lines without one)."""
    line = parse_line(text, scheme)
    assert line is not None, text
    return entry_id(provider, line)
