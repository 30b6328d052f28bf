"""What a service declares to the host: its name, settings and a build step, and what the
build step returns (the parts the host runs, checks and closes)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host.files import open_file_limit
from proxyfleet.common.messaging.relay import OutboxRelay
from proxyfleet.common.providers import ProvidersConfig

S = TypeVar("S")

Run = Callable[[asyncio.Event], Awaitable[None]]
"""A long-running component: works until the event is set, then returns."""


@dataclass(frozen=True, slots=True)
class Check:
    """A readiness answer with a detail for /readyz (e.g. the outbox's backlog)."""

    ok: bool
    detail: str = ""


def outbox_check(relay: OutboxRelay) -> Callable[[], Awaitable[Check]]:
    """A readiness check of an outbox relay, with its backlog as the detail."""

    async def check() -> Check:
        ok = await relay.ready()
        try:
            backlog = await relay.backlog()
        except StoreUnavailable:
            return Check(ok=False, detail="outbox unreadable")
        return Check(ok=ok, detail=f"{backlog.length} pending, oldest {backlog.oldest_age:.1f} s")

    return check


ReadyCheck = Callable[[], "Awaitable[bool | Check] | bool | Check"]
"""A readiness check: a function returning a bool (or a Check), or a coroutine function."""
Closer = Callable[[], Awaitable[object]]
LoopRunner = Callable[[Coroutine[Any, Any, int]], int]
"""Runs the service's main coroutine on an event loop (asyncio.run, uvloop.run...)."""


@dataclass(slots=True)
class Parts:
    """What a service runs: components by name (a component that returns ends the
    service), readiness checks by name (besides the host's per backend), and things to
    close in order once every component has stopped."""

    components: dict[str, Run]
    ready: dict[str, ReadyCheck] = field(default_factory=dict)
    close: list[Closer] = field(default_factory=list)
    exit_code: Callable[[], int] = lambda: 0
    """The exit code of a clean stop (gc --once: 1 when a provider was skipped)."""


@dataclass(frozen=True, slots=True)
class Context(Generic[S]):
    """What the build step gets: settings, the providers config and the open connections."""

    service: str
    common: CommonSettings
    settings: S
    providers: ProvidersConfig
    clock: Clock
    stop: asyncio.Event
    nats_client: NatsClient | None = None
    redis_client: aioredis.Redis | None = None
    open_files: int = field(default_factory=open_file_limit)
    """The soft open-file limit (raised at start when the service asks)."""

    @property
    def nats(self) -> NatsClient:
        if self.nats_client is None:
            raise RuntimeError(f"{self.service}: declare needs_nats to get a NATS connection")
        return self.nats_client

    @property
    def redis(self) -> aioredis.Redis:
        if self.redis_client is None:
            raise RuntimeError(f"{self.service}: declare needs_redis to get a Redis client")
        return self.redis_client


def _unchanged(common: CommonSettings, settings: S, providers: ProvidersConfig) -> S:
    return settings


def _asyncio(_: object) -> LoopRunner:
    return asyncio.run


def _no_timeout(_: object) -> float | None:
    return None


@dataclass(frozen=True, slots=True)
class Service(Generic[S]):
    """A service as the host runs it (`proxyfleet.common.host.main(service)`)."""

    name: str
    """Short name: the command is proxyfleet-<name>, the env prefix PROXYFLEET_<NAME>_."""
    summary: str
    """First line of --help."""
    settings: type[S]
    """The service's settings dataclass (CommonSettings is always added)."""
    build: Callable[[Context[S]], Awaitable[Parts]]
    """Builds the parts once the connections are open; may raise ConfigError."""
    needs_nats: bool = True
    needs_redis: bool = True
    raise_open_files: bool = False
    """Raise the soft open-file limit to the hard one before the build (many sockets)."""
    configure: Callable[[CommonSettings, S, ProvidersConfig], S] = _unchanged
    """Checks the settings against the providers config before anything connects (raises
    ConfigError) and returns them, possibly adjusted (e.g. boot_timeout from the config)."""
    loop: Callable[[S], LoopRunner] = _asyncio
    connect_timeout: Callable[[S], float | None] = _no_timeout
    """Seconds to wait for NATS at start before exiting 1 (None: wait until stopped)."""
