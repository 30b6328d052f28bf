"""The `tls_upstream` fixture: CONNECT inside TLS to Squid, verified against the fixture's
own CA, with its credentials only."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import socket
import ssl

from tests.conftest import TargetServer
from tests.upstreams.curl import fetch_target
from tests.upstreams.tls_proxy import TlsUpstream


def test_a_tunnel_through_it_leaves_from_its_exit_address(
    tls_upstream: TlsUpstream, target: TargetServer
) -> None:
    result = fetch_target(
        target, "--proxy", tls_upstream.url(), "--proxy-cacert", tls_upstream.ca_file
    )
    assert result.connect_status == 200
    assert result.seen_ip() == tls_upstream.exit_address


def test_a_wrong_password_gets_407(tls_upstream: TlsUpstream, target: TargetServer) -> None:
    wrong = dataclasses.replace(tls_upstream, password="not-the-password")
    result = fetch_target(target, "--proxy", wrong.url(), "--proxy-cacert", wrong.ca_file)
    assert result.connect_status == 407
    assert result.code != 0


def test_its_certificate_is_not_trusted_without_its_ca(
    tls_upstream: TlsUpstream, target: TargetServer
) -> None:
    result = fetch_target(target, "--proxy", tls_upstream.url())
    assert result.code != 0
    assert result.connect_status == 0


def test_its_certificate_verifies_for_127_0_0_1_with_its_ca(tls_upstream: TlsUpstream) -> None:
    context = ssl.create_default_context(cafile=tls_upstream.ca_file)
    with (
        socket.create_connection((tls_upstream.host, tls_upstream.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=tls_upstream.host) as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_its_url_percent_encodes_the_credentials(tls_upstream: TlsUpstream) -> None:
    assert tls_upstream.url() == f"https://tls-user:tls%3Apw%401@127.0.0.1:{tls_upstream.port}"


async def test_asyncio_gets_tls_inside_its_tls(
    tls_upstream: TlsUpstream, target: TargetServer
) -> None:
    """What a Python client (the gateway, the prober) does: TLS to the proxy, CONNECT,
    then the target's TLS inside that tunnel."""
    up = tls_upstream
    token = base64.b64encode(f"{up.username}:{up.password}".encode()).decode()
    reader, writer = await asyncio.open_connection(
        up.host, up.port, ssl=ssl.create_default_context(cafile=up.ca_file)
    )
    try:
        async with asyncio.timeout(5):
            authority = f"127.0.0.1:{target.port}"
            writer.write(
                f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
                f"Proxy-Authorization: Basic {token}\r\n\r\n".encode()
            )
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
            await writer.start_tls(
                ssl.create_default_context(cafile=target.ca_file), server_hostname="127.0.0.1"
            )
            writer.write(b"GET /probe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            response = await reader.read()
    finally:
        writer.close()
    assert json.loads(response.partition(b"\r\n\r\n")[2])["ip"] == up.exit_address
