"""Health through real upstreams of every scheme (tests/upstreams): microsocks for socks5 and
socks5h, Squid's https_port for https. Each leaves from an exit address of its own, which
the target echoes: a probe's exit IP says which upstream its tunnel went through."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from tests.conftest import TargetServer
from tests.health.conftest import Collector, MakeProxy, RunWorker, events_of
from tests.upstreams.socks5 import Socks5Upstream
from tests.upstreams.tls_proxy import TlsUpstream

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Scheme
from proxyfleet.devstack.servers import free_port
from proxyfleet.health import loops
from proxyfleet.health.probe import FailureKind, parse_target
from proxyfleet.health.prober import OK, Prober, make_ssl_context


@dataclass(frozen=True, slots=True)
class Upstream:
    scheme: Scheme
    port: int
    username: str
    password: str
    exit_address: str


@pytest.fixture(params=[Scheme.SOCKS5, Scheme.SOCKS5H, Scheme.HTTPS])
def upstream(
    request: pytest.FixtureRequest, socks5_upstream: Socks5Upstream, tls_upstream: TlsUpstream
) -> Upstream:
    scheme: Scheme = request.param
    up: Socks5Upstream | TlsUpstream = tls_upstream if scheme == Scheme.HTTPS else socks5_upstream
    return Upstream(scheme, up.port, up.username, up.password, up.exit_address)


def _proxy(up: Upstream, *, password: str = "", port: int = 0) -> Proxy:
    now = time.time()
    return Proxy(
        id="pupstream",
        provider="static",
        zone="z1",
        phase=Phase.READY,
        gen=1,
        username=up.username,
        password=password or up.password,
        created_at=now,
        updated_at=now,
        host="127.0.0.1",
        port=port or up.port,
        scheme=up.scheme,
        external=True,
    )


def _prober(target_url: str, target: TargetServer, tls_upstream: TlsUpstream) -> Prober:
    return Prober(
        parse_target(target_url),
        timeout=3,
        clock=SystemClock(),
        ssl_context=make_ssl_context(target.ca_file),
        proxy_ssl_context=make_ssl_context(tls_upstream.ca_file),
    )


# ---- one probe ----------------------------------------------------------------------------


@pytest.mark.parametrize("loop", loops.LOOPS)
def test_a_probe_leaves_through_the_upstream_of_its_scheme(
    loop: str, upstream: Upstream, target: TargetServer, tls_upstream: TlsUpstream
) -> None:
    async def probe() -> tuple[str, str, str]:
        outcome = await _prober(target.url, target, tls_upstream).probe(_proxy(upstream))
        return outcome.kind, outcome.result.error, outcome.result.egress_ip

    kind, error, egress_ip = loops.run(probe(), loop)
    assert (kind, error) == (OK, "")
    assert egress_ip == upstream.exit_address


async def test_socks5h_leaves_the_name_to_the_proxy_and_socks5_resolves_it(
    socks5_upstream: Socks5Upstream, target: TargetServer, tls_upstream: TlsUpstream
) -> None:
    by_name = target.url.replace("127.0.0.1", "localhost")  # its certificate names both
    prober = _prober(by_name, target, tls_upstream)
    s5 = socks5_upstream
    for scheme in (Scheme.SOCKS5H, Scheme.SOCKS5):
        up = Upstream(scheme, s5.port, s5.username, s5.password, s5.exit_address)
        outcome = await prober.probe(_proxy(up))
        assert (outcome.kind, outcome.result.egress_ip) == (OK, s5.exit_address), scheme


async def test_wrong_credentials_are_a_clear_auth_failure(
    upstream: Upstream, target: TargetServer, tls_upstream: TlsUpstream
) -> None:
    wrong = "not-the-password"
    outcome = await _prober(target.url, target, tls_upstream).probe(
        _proxy(upstream, password=wrong)
    )
    expected = (
        "proxy rejected credentials (407)"
        if upstream.scheme == Scheme.HTTPS
        else "proxy rejected credentials (SOCKS5: the server refused the username/password)"
    )
    assert (outcome.kind, outcome.result.error) == (FailureKind.AUTH, expected)
    assert wrong not in outcome.result.error
    assert upstream.password not in outcome.result.error


async def test_an_https_proxy_not_signed_by_the_bundle_is_refused_before_any_credential(
    tls_upstream: TlsUpstream, target: TargetServer
) -> None:
    system_cas = Prober(
        parse_target(target.url),
        timeout=3,
        clock=SystemClock(),
        ssl_context=make_ssl_context(target.ca_file),
    )
    up = Upstream(Scheme.HTTPS, tls_upstream.port, "u", "p", tls_upstream.exit_address)
    outcome = await system_cas.probe(_proxy(up))
    assert outcome.kind == FailureKind.PROXY
    assert outcome.result.error.startswith("proxy certificate rejected: ")


# ---- the health worker --------------------------------------------------------------------


async def test_health_makes_a_proxy_of_each_scheme_ready_with_its_exit_address(
    socks5_upstream: Socks5Upstream,
    tls_upstream: TlsUpstream,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    events: Collector,
) -> None:
    made: dict[str, str] = {}
    ups: list[tuple[Scheme, Socks5Upstream | TlsUpstream]] = [
        (Scheme.SOCKS5, socks5_upstream),
        (Scheme.SOCKS5H, socks5_upstream),
        (Scheme.HTTPS, tls_upstream),
    ]
    for scheme, up in ups:
        proxy = await make_proxy(
            up.port, scheme=scheme, username=up.username, password=up.password, external=True
        )
        made[proxy.id] = up.exit_address
    async with run_worker(proxy_ca_bundle=tls_upstream.ca_file):
        await events.wait_for(
            lambda: all(
                any(e.type == "proxy.ready" for e in events_of(events, pid)) for pid in made
            )
        )
    for pid, exit_address in made.items():
        stored = await registry.get(pid)
        assert stored is not None
        assert (stored.phase, stored.egress_ip) == (Phase.READY, exit_address), stored.scheme


async def test_wrong_socks5_credentials_keep_a_proxy_booting_with_the_reason(
    socks5_upstream: Socks5Upstream,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    probe_results: Collector,
) -> None:
    up = socks5_upstream
    proxy = await make_proxy(
        up.port, scheme=Scheme.SOCKS5H, username=up.username, password="wrong", external=True
    )
    async with run_worker():
        await probe_results.wait_for(
            lambda: sum(r.proxy_id == proxy.id for r in probe_results.items) >= 2
        )
    stored = await registry.get(proxy.id)
    assert stored is not None
    assert stored.phase is Phase.BOOTING
    assert stored.last_probe_error == (
        "proxy rejected credentials (SOCKS5: the server refused the username/password)"
    )


@contextlib.asynccontextmanager
async def _path_to(port: int, upstream_port: int) -> AsyncIterator[None]:
    """A relay on `port` to the upstream while the block runs: the network path to a
    proxy that was down and came back (the proxy itself keeps running)."""
    writers: list[asyncio.StreamWriter] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        writers.extend((writer, up_writer))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(relay, "127.0.0.1", port)
    try:
        yield
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


async def test_a_failed_external_socks5_proxy_serves_again_once_its_upstream_is_back(
    socks5_upstream: Socks5Upstream,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    probe_results: Collector,
    events: Collector,
    delete_intents: Collector,
) -> None:
    up = socks5_upstream
    port = free_port()  # nothing there until the path to the upstream is back
    proxy = await make_proxy(
        port,
        scheme=Scheme.SOCKS5,
        username=up.username,
        password=up.password,
        phase=Phase.FAILED,
        external=True,
    )
    async with run_worker(failed_reprobe_min=0.3, failed_reprobe_max=0.6):
        await probe_results.wait_for(
            lambda: sum(r.proxy_id == proxy.id for r in probe_results.items) >= 2
        )
        assert not any(r.ok for r in probe_results.items if r.proxy_id == proxy.id)
        async with _path_to(port, up.port):
            await events.wait_for(
                lambda: any(e.type == "proxy.ready" for e in events_of(events, proxy.id))
            )
    back = await registry.get(proxy.id)
    assert back is not None
    assert (back.phase, back.egress_ip, back.reason) == (Phase.READY, up.exit_address, "")
    assert delete_intents.items == []  # nothing outside Proxyfleet is deleted
