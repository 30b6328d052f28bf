"""A real API for the client's and the CLI's tests (uvicorn, real Redis and NATS) served
from a thread of its own on the system clock: the sync client blocks the test's thread, so the
server cannot share it, and leases must expire in real time for renewal to matter."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from tests.api.helpers import ADMIN, CLIENT, PROVIDER, api_settings, providers_config
from tests.api.serving import serve
from tests.conftest import TargetServer
from tests.health.conftest import ProxyProcess, _squid

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.messaging.jetstream import connect_nats
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.common.wire.events import Event
from proxyfleet.common.wire.models import Phase, Proxy

T = TypeVar("T")
PROXY_PASSWORD = "s3cret-pass"
"""Of the proxies `ready_proxy` makes, unless told another (no proxy checks it)."""
COOLDOWN = 1.0
"""Seconds a released proxy rests before its next grant (short: tests wait it out)."""


@dataclass
class LiveApi:
    """An API served on its own event loop in a thread; `run` executes a coroutine there."""

    url: str
    loop: asyncio.AbstractEventLoop
    registry: ProxyRegistry
    nats: NatsClient
    egress: EgressStore
    """Confirms exit addresses as health does (tests that need shared ones)."""
    admin_token: str = ADMIN
    client_token: str = CLIENT
    events: list[Event] = field(default_factory=list)
    """Every event published since the API started."""

    def run(self, coro: Awaitable[T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(_coroutine(coro), self.loop).result(timeout)

    def ready_proxy(
        self,
        pid: str,
        *,
        zone: str = "z1",
        port: int = 3128,
        username: str = "user",
        password: str = PROXY_PASSWORD,
        pool: str = "",
    ) -> None:
        """A ready proxy straight through the registry (what provisioner and health do),
        a member of `pool` when given."""
        self.run(_make_ready(self.registry, pid, zone, port, username, password, pool))

    def events_of(self, event_type: str, lease_id: str) -> list[Event]:
        return [e for e in list(self.events) if e.type == event_type and e.lease_id == lease_id]

    def wait_for_event(self, event_type: str, lease_id: str, within: float = 5) -> Event:
        """The first event of that type for that lease (events arrive after the answer)."""
        deadline = time.monotonic() + within
        while not (found := self.events_of(event_type, lease_id)):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {event_type} event for {lease_id} in {within} s")
            time.sleep(0.05)
        return found[0]


async def _coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _make_ready(
    registry: ProxyRegistry,
    pid: str,
    zone: str,
    port: int,
    username: str,
    password: str,
    pool: str = "",
) -> None:
    now = SystemClock().now()
    proxy = Proxy(
        id=pid,
        provider=PROVIDER,
        zone=zone,
        phase=Phase.PENDING,
        gen=0,
        username=username,
        password=password,
        created_at=now,
        updated_at=now,
        pool=pool,
        labels={POOL_LABEL: pool} if pool else {},
    )
    assert await registry.create(proxy)
    await registry.transition(pid, Phase.PROVISIONING)
    await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=port)
    await registry.transition(pid, Phase.READY, last_ok_at=now)


@pytest.fixture
def live_api(redis_url: str, nats_url: str) -> Iterator[LiveApi]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="live-api", daemon=True)
    thread.start()
    events: list[Event] = []

    async def on_event(msg: Msg) -> None:
        events.append(msgspec.json.decode(msg.data, type=Event))

    async def start() -> tuple[LiveApi, Callable[[], Awaitable[None]]]:
        redis: aioredis.Redis = connect_redis(redis_url)
        await redis.flushdb()
        nc = await connect_nats(nats_url, "client-tests")
        await nc.subscribe("proxyfleet.events.>", cb=on_event)
        await nc.flush()
        settings = api_settings(redis_url, nats_url, cooldown=COOLDOWN)
        app = create_app(settings, AppDeps(providers=providers_config(), clock=SystemClock()))
        url, stop_server = await serve(app)

        async def stop() -> None:
            await stop_server()
            await nc.close()
            await redis.aclose()

        live = LiveApi(
            url,
            loop,
            ProxyRegistry(redis, SystemClock()),
            nc,
            EgressStore(redis, SystemClock()),
            events=events,
        )
        return live, stop

    live, stop = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield live
    finally:
        live.run(stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture(scope="session")
def client_squid(target: TargetServer) -> Iterator[ProxyProcess]:
    """A real Squid with basic auth (tests/health's), for pages fetched through a lease."""
    proxy = _squid([target.port])
    proxy.start()
    yield proxy
    proxy.kill()
    shutil.rmtree(proxy.workdir, ignore_errors=True)
