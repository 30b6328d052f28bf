"""Real probes through real Squid and proxy.py processes to the dev HTTPS target."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator

import pytest
from tests.conftest import TargetServer
from tests.health.conftest import PASSWORD, USER, ProxyProcess

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.wire.models import Phase, Proxy
from proxyfleet.devstack.servers import free_port
from proxyfleet.health import loops
from proxyfleet.health.probe import FailureKind, parse_target
from proxyfleet.health.prober import OK, Prober, make_ssl_context


def _proxy(port: int, password: str = PASSWORD, host: str = "127.0.0.1") -> Proxy:
    now = time.time()
    return Proxy(
        id="pprobe",
        provider="local",
        zone="z1",
        phase=Phase.READY,
        gen=3,
        username=USER,
        password=password,
        created_at=now,
        updated_at=now,
        host=host,
        port=port,
    )


@pytest.fixture(params=["squid", "proxypy"])
def engine(request: pytest.FixtureRequest) -> ProxyProcess:
    proxy: ProxyProcess = request.getfixturevalue(request.param)
    return proxy


async def test_good_probe_reports_latency_and_egress_ip(
    engine: ProxyProcess, prober: Prober
) -> None:
    outcome = await prober.probe(_proxy(engine.port))
    assert outcome.kind == OK, outcome.result.error
    result = outcome.result
    assert result.ok
    assert result.error == ""
    assert result.proxy_id == "pprobe"
    assert result.egress_ip == "127.0.0.1"
    assert 0 < result.latency_ms < 250
    assert abs(result.time - time.time()) < 5


async def test_wrong_credentials_fail_with_407(engine: ProxyProcess, prober: Prober) -> None:
    outcome = await prober.probe(_proxy(engine.port, password="wrong"))
    assert outcome.kind == FailureKind.AUTH
    assert not outcome.result.ok
    assert outcome.result.error == "proxy rejected credentials (407)"


async def test_nothing_listening_is_unreachable(prober: Prober) -> None:
    outcome = await prober.probe(_proxy(free_port()))
    assert outcome.kind == FailureKind.UNREACHABLE
    assert outcome.result.error.startswith("proxy unreachable: ")


async def test_proxy_without_address(prober: Prober) -> None:
    outcome = await prober.probe(_proxy(0, host=""))
    assert outcome.result.error == "proxy has no address yet"


async def test_untrusted_target_certificate_is_a_tls_failure(
    squid: ProxyProcess, target: TargetServer
) -> None:
    system_cas = Prober(
        parse_target(target.url),
        timeout=2,
        clock=SystemClock(),
        ssl_context=ssl.create_default_context(),
    )
    outcome = await system_cas.probe(_proxy(squid.port))
    assert outcome.kind == FailureKind.TLS
    assert outcome.result.error.startswith("target certificate rejected: ")


async def test_squid_refuses_a_port_it_does_not_allow(squid: ProxyProcess) -> None:
    elsewhere = Prober(parse_target("https://127.0.0.1:1/"), timeout=2, clock=SystemClock())
    outcome = await elsewhere.probe(_proxy(squid.port))
    assert outcome.kind == FailureKind.PROXY
    assert outcome.result.error == "proxy refused CONNECT: 403 Forbidden"


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """Accepts connections and never answers: a black-holed proxy."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield int(server.sockets[0].getsockname()[1])
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_silent_proxy_times_out(silent_server: int, target: TargetServer) -> None:
    quick = Prober(parse_target(target.url), timeout=0.2, clock=SystemClock())
    start = time.monotonic()
    outcome = await quick.probe(_proxy(silent_server))
    assert time.monotonic() - start < 1.0
    assert outcome.kind == FailureKind.TIMEOUT
    assert outcome.result.error == "timed out after 0.2s waiting for the proxy's CONNECT reply"
    assert 150 < outcome.result.latency_ms < 1000


# ---- the connection layer, on both event loops ------------------------------------------


async def _against_fake_proxy(answer: bytes, target_url: str) -> tuple[str, str]:
    """Probe a fake proxy that reads the CONNECT, writes `answer` and closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    try:
        prober = Prober(parse_target(target_url), timeout=2, clock=SystemClock())
        outcome = await prober.probe(_proxy(port))
        return outcome.kind, outcome.result.error
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("loop", loops.LOOPS)
@pytest.mark.parametrize(
    ("answer", "kind", "error"),
    [
        (b"", FailureKind.PROXY, "proxy closed the connection before answering"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", FailureKind.PROXY, "proxy sent no HTTP status line"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 20_000, FailureKind.PROXY, "proxy sent a response"),
        (b"HTTP/1.1 200 OK\r\n\r\n", FailureKind.TLS, "tunnel closed during the TLS handshake"),
    ],
)
def test_misbehaving_proxies_fail_with_a_reason(
    loop: str, answer: bytes, kind: str, error: str, target: TargetServer
) -> None:
    got_kind, got_error = loops.run(_against_fake_proxy(answer, target.url), loop)
    assert (got_kind, got_error[: len(error)]) == (kind, error)


@pytest.mark.parametrize("loop", loops.LOOPS)
def test_probes_on_either_loop(loop: str, squid: ProxyProcess, target: TargetServer) -> None:
    async def probe_all() -> list[str]:
        prober = Prober(
            parse_target(target.url),
            timeout=2,
            clock=SystemClock(),
            ssl_context=make_ssl_context(target.ca_file),
        )
        good = await prober.probe(_proxy(squid.port))
        assert good.result.egress_ip == "127.0.0.1"
        assert 0 < good.result.latency_ms < 1000
        wrong = await prober.probe(_proxy(squid.port, password="wrong"))
        nobody = await prober.probe(_proxy(free_port()))
        return [good.kind, wrong.kind, nobody.kind]

    assert loops.run(probe_all(), loop) == [OK, FailureKind.AUTH, FailureKind.UNREACHABLE]
