"""The gateway's `Dialer` against scripted loopback peers: what a SOCKS5 upstream is sent
(greeting, RFC 1929 credentials, CONNECT by address for `socks5`, by name for
`socks5h`) and how each refusal maps; CONNECT inside TLS to an `https` upstream, its
certificate verified against the CA bundle setting. The same through the real upstreams
(microsocks, Squid's https_port) is in test_gateway_upstreams.py."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.store.lease_terms import GrantedProxy
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.target import make_tls_material, server_ssl_context
from proxyfleet.gateway import upstream
from proxyfleet.gateway.splice import Side
from proxyfleet.gateway.upstream import Dialer, Unresolved, UpstreamFailed, tls_context

USER, SECRET = "sock-user", "s3cret:pw@1"


@dataclass
class SocksPeer:
    """A SOCKS5 server that answers as told, records what it was sent, and echoes what
    comes through an open tunnel."""

    method: int = 0x02
    auth_ok: bool = True
    reply: int = 0x00
    port: int = 0
    methods: bytes = b""
    auth: tuple[str, str] | None = None
    connect: tuple[int, str, int] | None = None
    """ATYP, the address or name, the port."""
    done: list[bool] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._dialogue(reader, writer)
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    async def _dialogue(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _, count = await reader.readexactly(2)
        self.methods = await reader.readexactly(count)
        writer.write(bytes([5, self.method]))
        if self.method == 0xFF:
            return
        if self.method == 0x02:
            _, ulen = await reader.readexactly(2)
            user = await reader.readexactly(ulen)
            secret = await reader.readexactly((await reader.readexactly(1))[0])
            self.auth = (user.decode(), secret.decode())
            writer.write(bytes([1, 0 if self.auth_ok else 1]))
            if not self.auth_ok:
                return
        atyp = (await reader.readexactly(4))[3]
        if atyp == 3:
            where = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
        else:
            where = str(ipaddress.ip_address(await reader.readexactly(4 if atyp == 1 else 16)))
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        self.connect = (atyp, where, port)
        writer.write(bytes([5, self.reply, 0, 1, 127, 0, 0, 1, 0, 80]))
        while self.reply == 0 and (data := await reader.read(65_536)):
            writer.write(data)
            await writer.drain()


@contextlib.asynccontextmanager
async def serving(peer: SocksPeer) -> AsyncIterator[SocksPeer]:
    server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
    peer.port = server.sockets[0].getsockname()[1]
    async with server:
        yield peer


def proxy(port: int, scheme: str, username: str = USER, password: str = SECRET) -> GrantedProxy:
    return GrantedProxy("p1", "static", "z1", "127.0.0.1", port, username, password, scheme)


def dialer(ca_bundle: str = "") -> Dialer:
    return Dialer(2.0, 16_384, tls_context(ca_bundle))


async def echoes(side: Side) -> bool:
    side.write(b"ping")
    async with asyncio.timeout(5):
        return await side.read_exactly(4) == b"ping"


async def test_socks5h_sends_the_name_and_the_credentials() -> None:
    async with serving(SocksPeer()) as peer:
        side = await dialer().tunnel(proxy(peer.port, "socks5h"), "localhost", 8443)
        assert await echoes(side)
        side.abort()
    assert peer.methods == b"\x02"
    assert peer.auth == (USER, SECRET)
    assert peer.connect == (3, "localhost", 8443)


async def test_socks5_resolves_the_name_itself() -> None:
    async with serving(SocksPeer()) as peer:
        side = await dialer().tunnel(proxy(peer.port, "socks5"), "localhost", 8443)
        side.abort()
    assert peer.connect is not None
    atyp, where, port = peer.connect
    assert atyp in (1, 4)
    assert ipaddress.ip_address(where).is_loopback
    assert port == 8443


async def test_an_ip_literal_goes_as_an_address_for_both() -> None:
    for scheme in ("socks5", "socks5h"):
        async with serving(SocksPeer()) as peer:
            side = await dialer().tunnel(proxy(peer.port, scheme), "[::1]", 443)
            side.abort()
        assert peer.connect == (4, "::1", 443)


async def test_a_proxy_without_credentials_is_offered_no_auth() -> None:
    async with serving(SocksPeer(method=0x00)) as peer:
        side = await dialer().tunnel(proxy(peer.port, "socks5h", "", ""), "example.test", 80)
        assert await echoes(side)
        side.abort()
    assert peer.methods == b"\x00"
    assert peer.auth is None


@pytest.mark.parametrize(
    ("told", "says"),
    [
        ({"auth_ok": False}, "refused the username/password"),
        ({"method": 0xFF}, "accepts none of our auth methods"),
        ({"reply": 0x05}, "CONNECT refused: connection refused"),
        ({"reply": 0x04}, "CONNECT refused: host unreachable"),
        ({"reply": 0x02}, "CONNECT refused: not allowed"),
    ],
)
async def test_each_refusal_is_an_upstream_failure_without_the_secret(
    told: dict[str, Any], says: str
) -> None:
    async with serving(SocksPeer(**told)) as peer:
        with pytest.raises(UpstreamFailed, match=says) as failed:
            await dialer().tunnel(proxy(peer.port, "socks5h"), "example.test", 443)
    assert not isinstance(failed.value, Unresolved)
    assert SECRET not in str(failed.value)
    assert USER not in str(failed.value)


async def test_a_socks5_proxy_that_closes_at_once_is_an_upstream_failure() -> None:
    async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(UpstreamFailed, match="SOCKS5 failed: IncompleteReadError"):
            await dialer().tunnel(proxy(port, "socks5h"), "example.test", 443)


async def test_nothing_listening_is_an_upstream_failure() -> None:
    for scheme in ("socks5h", "https", "http"):
        with pytest.raises(UpstreamFailed, match="connect failed"):
            await dialer().tunnel(proxy(free_port(), scheme), "127.0.0.1", 443)


async def test_a_name_that_does_not_resolve_here_is_unresolved_for_socks5(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_such_name(host: str, port: int) -> str:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(upstream, "resolve", no_such_name)
    async with serving(SocksPeer()) as peer:
        with pytest.raises(Unresolved, match=r"cannot resolve nowhere\.test"):
            await dialer().tunnel(proxy(peer.port, "socks5"), "nowhere.test", 443)
        side = await dialer().tunnel(proxy(peer.port, "socks5h"), "nowhere.test", 443)
        side.abort()
    assert peer.connect == (3, "nowhere.test", 443)  # socks5h: the proxy's to resolve


async def test_plain_through_socks_is_a_tunnel_to_the_request_host() -> None:
    async with serving(SocksPeer()) as peer:
        side = await dialer().plain(proxy(peer.port, "socks5h"), "origin.test", 8080)
        assert await echoes(side)
        side.abort()
    assert peer.connect == (3, "origin.test", 8080)


# ---- https: CONNECT inside TLS -------------------------------------------------------------


@dataclass
class TlsProxy:
    port: int
    ca_file: str
    heads: list[bytes]


@contextlib.asynccontextmanager
async def tls_proxy(directory: Path, status: int = 200) -> AsyncIterator[TlsProxy]:
    """An HTTPS proxy: TLS (a certificate for 127.0.0.1 from a CA of its own), then it
    answers each head with `status` and echoes what follows a 200."""
    files = make_tls_material(directory, reuse=False)
    heads: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(f"HTTP/1.1 {status} Whatever\r\n\r\n".encode())
            while status == 200 and (data := await reader.read(65_536)):
                writer.write(data)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ssl_context(files))
    async with server:
        yield TlsProxy(server.sockets[0].getsockname()[1], str(files.ca), heads)


async def test_https_connects_inside_tls_verified_by_the_bundle(tmp_path: Path) -> None:
    async with tls_proxy(tmp_path) as up:
        side = await dialer(up.ca_file).tunnel(proxy(up.port, "https"), "127.0.0.1", 8443)
        assert await echoes(side)
        side.abort()
    (head,) = up.heads
    assert head.startswith(b"CONNECT 127.0.0.1:8443 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic " in head


async def test_https_with_a_certificate_the_bundle_does_not_trust_fails(tmp_path: Path) -> None:
    async with tls_proxy(tmp_path / "a") as up:
        other_ca = str(make_tls_material(tmp_path / "b", reuse=False).ca)
        for bundle in ("", other_ca):  # the system's store, another CA
            with pytest.raises(UpstreamFailed, match=r"^TLS: ") as failed:
                await dialer(bundle).tunnel(proxy(up.port, "https"), "127.0.0.1", 443)
            assert SECRET not in str(failed.value)
        assert up.heads == []  # nothing, credentials least of all, went to it


async def test_https_refusing_the_credentials_is_an_upstream_failure(tmp_path: Path) -> None:
    async with tls_proxy(tmp_path, status=407) as up:
        with pytest.raises(UpstreamFailed, match="answered CONNECT with 407"):
            await dialer(up.ca_file).tunnel(proxy(up.port, "https"), "127.0.0.1", 443)


async def test_plain_through_https_is_a_tls_connection_to_the_proxy(tmp_path: Path) -> None:
    async with tls_proxy(tmp_path) as up:
        side = await dialer(up.ca_file).plain(proxy(up.port, "https"), "origin.test", 80)
        side.write(b"GET http://origin.test/ HTTP/1.1\r\n\r\n")
        async with asyncio.timeout(5):
            assert await side.read_head() == b"HTTP/1.1 200 Whatever\r\n\r\n"
        side.abort()


def test_a_ca_bundle_that_cannot_load_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--upstream-ca-bundle"):
        tls_context(str(tmp_path / "missing.pem"))
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="--upstream-ca-bundle"):
        tls_context(str(tmp_path / "junk.pem"))
