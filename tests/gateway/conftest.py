"""Gateway fixtures: real Squids (tests/health's, reaching the HTTPS `target`), ready
proxies on them in the registry, gateways run in this loop through the service's own
assembly (`proxyfleet.gateway.assembly.assemble`), and real clients to drive them."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import pytest
import redis.asyncio as aioredis
import uvloop
from nats.aio.client import Client as NatsClient
from tests.api.helpers import (
    CLIENT,
    CLIENT_NAME,
    OTHER_CLIENT,
    OTHER_CLIENT_NAME,
    PROVIDER,
    Recorder,
    providers_config,
)
from tests.conftest import TargetServer
from tests.health.conftest import PASSWORD, USER, ProxyProcess, _squid

from proxyfleet.common import host
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.host.files import raise_open_files
from proxyfleet.common.messaging.jetstream import connect_nats, ensure_streams
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import Phase, Proxy
from proxyfleet.gateway.assembly import Assembly, assemble
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.tunnels import Tunnels

SQUIDS = 3
TOKENS = (f"{CLIENT_NAME}:{CLIENT}", f"{OTHER_CLIENT_NAME}:{OTHER_CLIENT}")


@pytest.fixture
def clock() -> SystemClock:
    """Real time: leases are granted and cooled down by real Squid traffic."""
    return SystemClock()


@pytest.fixture
def lease_store(redis_client: aioredis.Redis, clock: SystemClock) -> LeaseStore:
    """The lease store the gateways write, to read their leases back."""
    return LeaseStore(redis_client, clock, LeasePolicy())


@pytest.fixture
async def events(nc: NatsClient) -> Recorder:
    """Every event published from now on."""
    recorder = Recorder()
    await nc.subscribe("proxyfleet.events.>", cb=recorder.on_msg)
    await nc.flush()
    return recorder


@pytest.fixture(scope="session")
def gw_squids(target: TargetServer) -> Iterator[list[ProxyProcess]]:
    """Three real Squids with basic auth (USER/PASSWORD), shared by the gateway tests."""
    squids = [_squid([target.port]) for _ in range(SQUIDS)]
    for squid in squids:
        squid.start()
    yield squids
    for squid in squids:
        squid.kill()
        shutil.rmtree(squid.workdir, ignore_errors=True)


_ids = iter(range(1_000_000))


async def ready_proxy(
    registry: ProxyRegistry,
    port: int,
    *,
    zone: str = "z1",
    password: str = PASSWORD,
    pool: str = "",
) -> str:
    """A ready proxy on 127.0.0.1:port straight through the registry (what provisioner
    and health do), a member of `pool` when given; its id."""
    now = time.time()
    pid = f"gw{next(_ids):05d}"
    proxy = Proxy(
        id=pid, provider=PROVIDER, zone=zone, phase=Phase.PENDING, gen=0,
        username=USER, password=password, created_at=now, updated_at=now,
        pool=pool, labels={POOL_LABEL: pool} if pool else {},
    )  # fmt: skip
    assert await registry.create(proxy)
    await registry.transition(pid, Phase.PROVISIONING)
    await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=port)
    await registry.transition(pid, Phase.READY, last_ok_at=now)
    return pid


@pytest.fixture
async def fleet(registry: ProxyRegistry, gw_squids: list[ProxyProcess]) -> dict[str, int]:
    """Every shared Squid as a ready proxy: proxy id -> port."""
    return {await ready_proxy(registry, s.port): s.port for s in gw_squids}


@dataclass
class RunningGateway:
    port: int
    assembly: Assembly
    stop: asyncio.Event
    """Set it to stop the gateway (as SIGTERM does)."""
    components: list[asyncio.Future[None]]

    @property
    def tunnels(self) -> Tunnels:
        return self.assembly.tunnels

    def url(self, username: str = "crawler", token: str = CLIENT) -> str:
        """The proxy URL a client is given."""
        return f"http://{quote(username, safe='')}:{quote(token, safe='')}@127.0.0.1:{self.port}"


StartGateway = Callable[..., Awaitable[RunningGateway]]


@pytest.fixture
async def start_gateway(
    redis_client: aioredis.Redis, redis_url: str, nats_url: str, clock: SystemClock
) -> AsyncIterator[StartGateway]:
    """start_gateway(providers=..., **settings) -> a gateway serving on a free port (with
    tests/api's providers config unless given), until the test ends."""
    stops: list[tuple[asyncio.Event, list[asyncio.Future[None]], Any]] = []

    async def start(providers: ProvidersConfig | None = None, **overrides: Any) -> RunningGateway:
        settings = replace(
            # No drain unless a test asks: a test ending with a tunnel open need not wait.
            GatewaySettings(
                port=0, metrics_port=0, client_tokens=TOKENS, cooldown=30.0, drain_seconds=0.0
            ),
            **overrides,
        )
        nc = await connect_nats(nats_url, "gateway-tests")
        await ensure_streams(nc.jetstream())
        stop = asyncio.Event()
        ctx = host.Context(
            service="gateway",
            common=CommonSettings(redis_url=redis_url, nats_url=nats_url),
            settings=settings,
            providers=providers or providers_config(),
            clock=clock,
            stop=stop,
            nats_client=nc,
            redis_client=redis_client,
            open_files=raise_open_files(),  # as the host does for the gateway
        )
        try:
            assembly = assemble(ctx)
        except BaseException:  # a setting refused at start: nothing to stop but this
            await nc.close()
            raise
        tasks: list[asyncio.Future[None]] = [
            asyncio.ensure_future(run(stop)) for run in assembly.parts.components.values()
        ]
        stops.append((stop, tasks, nc))
        async with asyncio.timeout(10):
            await assembly.gateway.listening.wait()
        return RunningGateway(assembly.gateway.port, assembly, stop, tasks)

    yield start
    for stop, tasks, nc in stops:
        stop.set()
        await asyncio.gather(*tasks)
        await nc.close()


# ---- clients --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CurlResult:
    code: int
    head: str
    """Every response head curl saw (the gateway's CONNECT reply first), as dumped."""
    body: bytes
    stderr: str

    def header(self, name: str) -> list[str]:
        """Each value of a header, in every head."""
        prefix = name.lower() + ":"
        return [
            line.split(":", 1)[1].strip()
            for line in self.head.splitlines()
            if line.lower().startswith(prefix)
        ]


async def curl(proxy_url: str, url: str, *extra: str, ca_file: str = "") -> CurlResult:
    """The real curl, through the gateway (run as a process: the gateway shares this loop).
    The heads go to a file: under uvloop a child's stdio are sockets, which curl cannot
    open as /dev/stderr."""
    with tempfile.NamedTemporaryFile(prefix="pf-curl-heads-") as heads:
        argv = ["curl", "-sS", "--max-time", "10", "-x", proxy_url, "-D", heads.name, url]
        argv += [*(["--cacert", ca_file] if ca_file else []), *extra]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
        head = heads.read().decode(errors="replace")  # a few hundred bytes, local
    assert proc.returncode is not None
    return CurlResult(proc.returncode, head, out, err.decode(errors="replace"))


@dataclass
class RawReply:
    status: int
    head: bytes
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def header(self, name: str) -> str | None:
        for line in self.head.decode(errors="replace").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def close(self) -> None:
        self.writer.transport.abort()


async def raw_request(port: int, data: bytes) -> RawReply:
    """Send bytes as they are; the answer's head (status 0 when the gateway just closed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    async with asyncio.timeout(15):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
            head = getattr(exc, "partial", b"")
    parts = head.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return RawReply(status, head, reader, writer)


def connect_head(authority: str, username: str = "crawler", token: str = CLIENT) -> bytes:
    import base64  # noqa: PLC0415

    creds = base64.b64encode(f"{username}:{token}".encode()).decode()
    return (
        f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
        f"Proxy-Authorization: Basic {creds}\r\n\r\n"
    ).encode()


async def eventually(predicate: Callable[[], bool], within: float = 5.0) -> None:
    """Wait (polling, bounded) until `predicate()` holds; AssertionError after `within` s."""
    for _ in range(int(within / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    assert predicate(), f"not true within {within} s"


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every gateway test runs on plain asyncio and on uvloop (what the service runs on):
    their transports differ (uvloop's do not subclass asyncio.Transport)."""
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
