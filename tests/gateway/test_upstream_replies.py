"""What the SOCKS5 listener answers when the upstream fails: each failure of `Dialer` carries
the SOCKS5 reply code that says it (the upstream SOCKS5 proxy's own code for a target it
could not reach, an HTTP upstream's CONNECT status mapped, a time-out as TTL expired), and
a name asked for by a SOCKS5 client goes to a `socks5` upstream as a name."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.gateway.test_upstream_dialer import SocksPeer, dialer, proxy, serving, tls_proxy

from proxyfleet.common.domain.socks5 import Reply
from proxyfleet.common.store.lease_terms import GrantedProxy
from proxyfleet.common.wire.models import Scheme
from proxyfleet.devstack.servers import free_port
from proxyfleet.gateway import upstream
from proxyfleet.gateway.upstream import Dialer, UpstreamFailed, tls_context


@pytest.mark.parametrize(
    ("told", "reply"),
    [
        ({"reply": 0x01}, Reply.NETWORK_UNREACHABLE),  # its own failure: the proxy's
        ({"reply": 0x02}, Reply.NOT_ALLOWED),
        ({"reply": 0x03}, Reply.NETWORK_UNREACHABLE),
        ({"reply": 0x04}, Reply.HOST_UNREACHABLE),
        ({"reply": 0x05}, Reply.CONNECTION_REFUSED),
        ({"reply": 0x06}, Reply.TTL_EXPIRED),
        ({"reply": 0x08}, Reply.ADDRESS_TYPE_NOT_SUPPORTED),
        ({"auth_ok": False}, Reply.NETWORK_UNREACHABLE),
        ({"method": 0xFF}, Reply.NETWORK_UNREACHABLE),
    ],
)
async def test_a_socks5_upstreams_refusal_carries_its_reply(
    told: dict[str, Any], reply: Reply
) -> None:
    async with serving(SocksPeer(**told)) as peer:
        with pytest.raises(UpstreamFailed) as failed:
            await dialer().tunnel(proxy(peer.port, "socks5h"), "example.test", 443)
    assert failed.value.reply == reply


@pytest.mark.parametrize(
    ("status", "reply"),
    [
        (403, Reply.NOT_ALLOWED),
        (500, Reply.HOST_UNREACHABLE),
        (502, Reply.HOST_UNREACHABLE),
        (503, Reply.CONNECTION_REFUSED),
        (504, Reply.TTL_EXPIRED),
        (407, Reply.NETWORK_UNREACHABLE),  # its credentials refused: the proxy's failure
    ],
)
async def test_an_http_upstreams_connect_status_maps_to_a_reply(
    tmp_path: Path, status: int, reply: Reply
) -> None:
    async with tls_proxy(tmp_path, status=status) as up:
        with pytest.raises(UpstreamFailed) as failed:
            await dialer(up.ca_file).tunnel(proxy(up.port, "https"), "127.0.0.1", 443)
    assert failed.value.reply == reply


async def test_nothing_listening_is_network_unreachable_and_silence_ttl_expired() -> None:
    with pytest.raises(UpstreamFailed) as refused:
        await dialer().tunnel(proxy(free_port(), "http"), "127.0.0.1", 443)
    assert refused.value.reply == Reply.NETWORK_UNREACHABLE

    held: list[asyncio.StreamWriter] = []

    async def keep(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(keep, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        quick = Dialer(0.2, 16_384, tls_context(""))
        for scheme in ("http", "socks5h"):
            with pytest.raises(UpstreamFailed) as silent:
                await quick.tunnel(proxy(port, scheme), "127.0.0.1", 443)
            assert silent.value.reply == Reply.TTL_EXPIRED
        for writer in held:
            writer.transport.abort()


async def test_a_socks5_upstream_gets_the_name_when_not_to_resolve_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_lookup(host: str, port: int) -> str:
        raise AssertionError(f"resolved {host}")

    monkeypatch.setattr(upstream, "resolve", no_lookup)
    async with serving(SocksPeer()) as peer:
        leased: GrantedProxy = proxy(peer.port, Scheme.SOCKS5.value)
        side = await dialer().tunnel(leased, "nowhere.test", 443, resolve_here=False)
        side.abort()
    assert peer.connect == (3, "nowhere.test", 443)
