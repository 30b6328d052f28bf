"""Health fixtures: real Squid and proxy.py processes (reaching tests/conftest.py's HTTPS
`target`), a registry with proxies in it, running health workers, and collectors for what
they publish on NATS."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import bcrypt
import msgspec
import nats
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from tests.conftest import TargetServer

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.messaging.jetstream import ensure_streams, event_decoder
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import Event
from proxyfleet.common.wire.models import Phase, ProbeResult, Proxy, Scheme
from proxyfleet.devstack.servers import free_port, wait_tcp
from proxyfleet.health.prober import Prober, make_ssl_context
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.worker import HealthWorker

SQUID = "/usr/sbin/squid"
NCSA_AUTH = "/usr/lib/squid/basic_ncsa_auth"
USER, PASSWORD = "alice", "s3cret-pw"
PROVIDER = "local"


# ---- real proxies -------------------------------------------------------------------------


@dataclass
class ProxyProcess:
    """A real proxy listening on 127.0.0.1:port that requires USER/PASSWORD."""

    engine: str
    port: int
    argv: list[str]
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.workdir / "proxy.out", "ab")  # noqa: SIM115  (owned by the child)
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, cwd=self.workdir)
        log.close()
        try:
            wait_tcp("127.0.0.1", self.port, timeout=10)
        except TimeoutError:
            self.kill()
            raise

    def kill(self) -> None:
        """Gone at once, like a crashed VM."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def _squid(connect_ports: list[int], outgoing: str = "") -> ProxyProcess:
    """Squid with basic auth (leaving from the loopback address `outgoing`, if given).
    Running as root it drops to user `proxy`, so its folder is made outside pytest's
    private tmp tree and handed to that user."""
    workdir = Path(tempfile.mkdtemp(prefix="pf-squid-"))
    port = free_port()
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    (workdir / "passwd").write_text(f"{USER}:{digest}\n")
    (workdir / "squid.conf").write_text(
        f"""
http_port 127.0.0.1:{port}
pid_filename {workdir}/squid.pid
cache_log {workdir}/cache.log
access_log none
coredump_dir {workdir}
cache deny all
pinger_enable off
shutdown_lifetime 1 seconds
auth_param basic program {NCSA_AUTH} {workdir}/passwd
auth_param basic children 2 startup=2
auth_param basic realm proxyfleet-test
acl authed proxy_auth REQUIRED
acl SSL_ports port {" ".join(str(p) for p in connect_ports)}
acl CONNECT method CONNECT
http_access deny CONNECT !SSL_ports
http_access allow authed
http_access deny all
{f"tcp_outgoing_address {outgoing}" if outgoing else ""}
"""
    )
    workdir.chmod(0o755)
    if os.geteuid() == 0:
        user = pwd.getpwnam("proxy")
        for path in (workdir, *workdir.iterdir()):
            os.chown(path, user.pw_uid, user.pw_gid)
    argv = [SQUID, "-N", "-f", str(workdir / "squid.conf"), "-n", f"pftest{port}"]
    return ProxyProcess("squid", port, argv, workdir)


def _proxypy(workdir: Path) -> ProxyProcess:
    port = free_port()
    binary = str(Path(sys.executable).parent / "proxy")
    argv = [binary, "--hostname", "127.0.0.1", "--port", str(port)]
    argv += ["--basic-auth", f"{USER}:{PASSWORD}", "--num-workers", "1", "--log-level", "WARNING"]
    return ProxyProcess("proxy.py", port, argv, workdir)


@pytest.fixture(scope="session")
def squid(target: TargetServer) -> Iterator[ProxyProcess]:
    """One Squid shared by the tests that never stop it."""
    proxy = _squid([target.port])
    proxy.start()
    yield proxy
    proxy.kill()  # a graceful stop takes shutdown_lifetime and more; nothing to save here
    shutil.rmtree(proxy.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def proxypy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    proxy = _proxypy(tmp_path_factory.mktemp("proxypy"))
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture
def own_squid(target: TargetServer) -> Iterator[ProxyProcess]:
    """A Squid of this test's own, which it may kill and restart."""
    proxy = _squid([target.port])
    proxy.start()
    yield proxy
    proxy.kill()
    shutil.rmtree(proxy.workdir, ignore_errors=True)


# ---- registry and proxies -----------------------------------------------------------------


@pytest.fixture
def clock() -> SystemClock:
    """Real time: these tests run real proxies and workers (the registry follows it)."""
    return SystemClock()


class MakeProxy(Protocol):
    def __call__(
        self,
        port: int,
        *,
        phase: Phase = ...,
        password: str = ...,
        boot_timeout: float = ...,
        proxy_id: str = ...,
        scheme: Scheme = ...,
        external: bool = ...,
        username: str = ...,
    ) -> Awaitable[Proxy]: ...


_counter = iter(range(1_000_000))


@pytest.fixture
def make_proxy(registry: ProxyRegistry) -> MakeProxy:
    """A proxy on 127.0.0.1:port moved through the lifecycle as the provisioner would, to
    `booting` (then `ready` or `failed` if asked): the transition into booting schedules
    its probes."""

    async def make(
        port: int,
        *,
        phase: Phase = Phase.BOOTING,
        password: str = PASSWORD,
        boot_timeout: float = 60.0,
        proxy_id: str = "",
        scheme: Scheme = Scheme.HTTP,
        external: bool = False,
        username: str = USER,
    ) -> Proxy:
        now = time.time()
        pid = proxy_id or f"ptest{next(_counter):06d}{os.getpid()}"
        proxy = Proxy(
            id=pid,
            provider=PROVIDER,
            zone="z1",
            phase=Phase.PROVISIONING,
            gen=1,
            username=username,
            password=password,
            created_at=now,
            updated_at=now,
            scheme=scheme,
            external=external,
        )
        assert await registry.create(proxy)
        await registry.transition(
            pid,
            Phase.BOOTING,
            host="127.0.0.1",
            port=port,
            resource_id=f"res-{pid}",
            boot_deadline=now + boot_timeout,
        )
        if phase is Phase.READY:
            await registry.transition(pid, Phase.READY)
        elif phase is Phase.FAILED:  # as its last probe failed it, just now
            await registry.transition(pid, Phase.FAILED, reason="gone", last_probe_at=now)
        got = await registry.get(pid)
        assert got is not None
        assert got.phase is phase
        return got

    return make


# ---- NATS ---------------------------------------------------------------------------------


@dataclass
class Collector:
    """Messages seen on a subject, decoded; `wait_for` polls until a predicate holds."""

    items: list[Any] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    async def wait_for(self, predicate: Callable[[], bool], within: float = 5.0) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {within}s; saw {self.items!r}")
            await asyncio.sleep(0.02)


async def _collect(nc: NatsClient, subject: str, decode: Callable[[bytes], Any]) -> Collector:
    collector = Collector()

    async def on_msg(msg: Msg) -> None:
        collector.items.append(decode(msg.data))
        collector.headers.append(dict(msg.headers or {}))

    await nc.subscribe(subject, cb=on_msg)
    await nc.flush()
    return collector


@pytest.fixture
async def events(nc: NatsClient) -> Collector:
    """Every lifecycle event (a core subscription sees what JetStream stores)."""
    return await _collect(nc, f"{subjects.EVENT_PREFIX}.>", event_decoder.decode)


@pytest.fixture
async def probe_results(nc: NatsClient) -> Collector:
    decoder = msgspec.json.Decoder(ProbeResult)
    return await _collect(nc, f"{subjects.PROBE_PREFIX}.>", decoder.decode)


@pytest.fixture
async def delete_intents(nc: NatsClient) -> Collector:
    return await _collect(nc, subjects.intent_delete(PROVIDER), msgspec.json.decode)


def events_of(collector: Collector, proxy_id: str) -> list[Event]:
    return [e for e in collector.items if isinstance(e, Event) and e.proxy_id == proxy_id]


# ---- health workers -----------------------------------------------------------------------


@pytest.fixture
def health_settings(target: TargetServer, redis_url: str, nats_url: str) -> HealthSettings:
    """Fast settings for tests: probes every 0.3 s, each bounded to 0.25 s."""
    return HealthSettings(
        common=CommonSettings(nats_url=nats_url, redis_url=redis_url),
        target=target.url,
        ca_file=target.ca_file,
        interval=0.3,
        timeout=0.25,
        tick=0.02,
        concurrency=32,
        claim_batch=32,
        writers=4,
        stats_interval=0.2,
        metrics_port=0,
    )


@pytest.fixture
def prober(health_settings: HealthSettings) -> Prober:
    return Prober(
        health_settings.parsed_target(),
        timeout=health_settings.timeout,
        clock=SystemClock(),
        ssl_context=make_ssl_context(health_settings.ca_file),
    )


RunWorker = Callable[..., AbstractAsyncContextManager[HealthWorker]]


@pytest.fixture
def run_worker(
    redis_client: aioredis.Redis, nats_url: str, health_settings: HealthSettings
) -> RunWorker:
    """Start a health worker (its own NATS connection, like a replica); stop it on exit."""

    @contextlib.asynccontextmanager
    async def run(
        require_ip: tuple[str, ...] = (), **overrides: Any
    ) -> AsyncIterator[HealthWorker]:
        settings = replace(health_settings, **overrides)
        clock = SystemClock()
        client = await nats.connect(nats_url)
        js = client.jetstream()
        await ensure_streams(js)
        worker = HealthWorker(
            settings,
            registry=ProxyRegistry(redis_client, clock),
            egress=EgressStore(redis_client, clock),
            nc=client,
            prober=Prober(
                settings.parsed_target(),
                timeout=settings.timeout,
                clock=clock,
                ssl_context=make_ssl_context(settings.ca_file),
                proxy_ssl_context=settings.proxy_ssl_context()
                if settings.proxy_ca_bundle
                else None,
            ),
            clock=clock,
            providers=[PROVIDER],
            require_ip=require_ip,
        )
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        try:
            yield worker
        finally:
            stop.set()
            await asyncio.wait_for(task, 5)
            await client.close()

    return run
