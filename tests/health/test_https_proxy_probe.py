"""Probes of https proxies (TLS to the proxy, CONNECT inside it) that fail, against a
scripted TLS server in this process holding the dev target's certificate (a real HTTPS
proxy: test_upstream_probes.py)."""

from __future__ import annotations

import asyncio
import ssl
import time

import pytest
from tests.conftest import TargetServer

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.wire.models import Phase, Proxy, Scheme
from proxyfleet.devstack.target import TlsFiles, make_tls_material, server_ssl_context
from proxyfleet.health import loops
from proxyfleet.health.probe import FailureKind, parse_target
from proxyfleet.health.prober import Outcome, Prober
from proxyfleet.health.tls import make_ssl_context

USER, PASSWORD = "alice", "tls-s3cret"


def _proxy(port: int, host: str = "127.0.0.1") -> Proxy:
    now = time.time()
    return Proxy(
        id="ptls",
        provider="static",
        zone="z1",
        phase=Phase.READY,
        gen=1,
        username=USER,
        password=PASSWORD,
        created_at=now,
        updated_at=now,
        host=host,
        port=port,
        scheme=Scheme.HTTPS,
    )


async def _probe(
    target: TargetServer,
    answer: bytes,
    *,
    tls: bool = True,
    host: str = "127.0.0.1",
    proxy_ca: str | None = None,
) -> tuple[Outcome, list[bytes]]:
    """Probe a fake https proxy on `host` that reads the CONNECT (without `tls`: nothing),
    writes `answer` and closes."""
    requests: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if tls:
                requests.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(answer)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    context = server_ssl_context(TlsFiles.in_dir(target.directory)) if tls else None
    server = await asyncio.start_server(serve, host, 0, ssl=context)
    port = int(server.sockets[0].getsockname()[1])
    try:
        prober = Prober(
            parse_target(target.url),
            timeout=2,
            clock=SystemClock(),
            ssl_context=make_ssl_context(target.ca_file),
            proxy_ssl_context=make_ssl_context(
                proxy_ca if proxy_ca is not None else target.ca_file
            ),
        )
        return await prober.probe(_proxy(port, host)), requests
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("loop", loops.LOOPS)
def test_connect_goes_inside_tls_with_the_credentials(loop: str, target: TargetServer) -> None:
    answer = b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"
    outcome, requests = loops.run(_probe(target, answer), loop)
    assert (outcome.kind, outcome.result.error) == (
        FailureKind.AUTH,
        "proxy rejected credentials (407)",
    )
    assert len(requests) == 1
    assert requests[0].startswith(f"CONNECT 127.0.0.1:{target.port} ".encode())
    assert b"Proxy-Authorization: Basic " in requests[0]


@pytest.mark.parametrize("loop", loops.LOOPS)
def test_a_proxy_certificate_the_bundle_does_not_trust_is_the_proxys_failure(
    loop: str, target: TargetServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other_ca = make_tls_material(tmp_path_factory.mktemp("other-ca")).ca
    outcome, requests = loops.run(_probe(target, b"", proxy_ca=str(other_ca)), loop)
    assert outcome.kind == FailureKind.PROXY
    assert outcome.result.error.startswith("proxy certificate rejected: ")
    assert requests == []  # nothing, credentials least of all, went to an unverified proxy


async def test_the_proxy_certificate_must_name_the_proxys_host(target: TargetServer) -> None:
    outcome, _ = await _probe(target, b"", host="127.0.0.2")  # its certificate: 127.0.0.1
    assert outcome.kind == FailureKind.PROXY
    assert outcome.result.error.startswith("proxy certificate rejected: ")
    assert "127.0.0.2" in outcome.result.error


async def test_a_plain_http_proxy_behind_an_https_url_fails_the_tls_handshake(
    target: TargetServer,
) -> None:
    outcome, _ = await _probe(target, b"HTTP/1.1 400 Bad Request\r\n\r\n", tls=False)
    assert outcome.kind == FailureKind.PROXY
    assert outcome.result.error.startswith(("TLS with the proxy failed: ", "proxy closed"))
    assert PASSWORD not in outcome.result.error
