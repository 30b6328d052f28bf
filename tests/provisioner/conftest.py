"""Fixtures for the provisioner tests: a state dir Squid (as user proxy) can reach, every
proxy process started under it killed at the end, NATS/Redis clients, a runner in process."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.runner import ProvisionerRunner, RunnerSettings
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.provisioner_local.adapter import LocalProvider
from proxyfleet.provisioner_local.options import LocalOptions
from proxyfleet.provisioner_local.pure.egress_addresses import DEFAULT_EGRESS_RANGE

from .helpers import INSTALLATION, EventLog, kill_processes_referring_to, wait_until

# ---- processes and folders -----------------------------------------------------------


@pytest.fixture
def proxy_state_dir() -> Iterator[Path]:
    """A state dir under /tmp (pytest's tmp_path is 0700: Squid, run as user proxy when we
    are root, could not reach its files). Every process started under it is killed after."""
    path = Path(tempfile.mkdtemp(prefix="pf-prov-", dir="/tmp"))
    path.chmod(0o711)
    yield path
    kill_processes_referring_to(str(path))
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def make_local_provider(proxy_state_dir: Path) -> AsyncIterator[Callable[..., LocalProvider]]:
    made: list[LocalProvider] = []

    def make(
        engine: str = "auto",
        installation_id: str = INSTALLATION,
        connect_ports: tuple[int, ...] = (443,),
        port_range: tuple[int, int] = (20000, 29999),
        egress_range: str = DEFAULT_EGRESS_RANGE,
    ) -> LocalProvider:
        options = LocalOptions(
            state_dir=proxy_state_dir,
            installation_id=installation_id,
            engine=engine,
            connect_ports=list(connect_ports),
            port_range=port_range,
            egress_range=egress_range,
            stop_grace=0.5,
        )
        provider = LocalProvider(options)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.close()


@pytest.fixture(scope="session")
def tcp_target() -> Iterator[int]:
    """A TCP server that accepts and closes: the destination of CONNECT tests."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(2)
    server.close()


# ---- clock, publisher, runners -----------------------------------------------------------


@pytest.fixture
def clock() -> SystemClock:
    """Real time: these tests run real proxy processes (the registry follows it)."""
    return SystemClock()


@pytest.fixture
def publisher(nc: NatsClient) -> Publisher:
    return Publisher(nc, SystemClock())


@pytest.fixture
def provider_name() -> str:
    """A provider name of its own per test: its own intent subjects and durable consumer."""
    return f"t{secrets.token_hex(4)}"


@pytest.fixture
async def event_log(nc: NatsClient) -> AsyncIterator[EventLog]:
    log = EventLog()
    sub = await nc.subscribe("proxyfleet.events.proxy.>", cb=log.on_msg)
    yield log
    await sub.unsubscribe()


RunnerFactory = Callable[[Provider, RunnerSettings], Awaitable[ProvisionerRunner]]


@pytest.fixture
async def start_runner(nc: NatsClient, registry: ProxyRegistry) -> AsyncIterator[RunnerFactory]:
    """Start runners in process; all are stopped at the end of the test."""
    running: list[tuple[asyncio.Event, asyncio.Task[None]]] = []

    async def start(provider: Provider, settings: RunnerSettings) -> ProvisionerRunner:
        runner = ProvisionerRunner(
            nc=nc,
            registry=registry,
            provider=provider,
            settings=settings,
            installation_id=INSTALLATION,
        )
        stop = asyncio.Event()
        running.append((stop, asyncio.create_task(runner.run(stop))))
        await wait_until(runner.ready, 5.0, "the runner to be ready")
        return runner

    yield start
    for stop, _ in running:
        stop.set()
    for _, task in running:
        await asyncio.wait_for(task, 10)
