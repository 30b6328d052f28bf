"""Clients of the gateway's SOCKS5 listener: the real curl (`--socks5-hostname`,
`--proxy-user`) and a raw one that sends the handshake byte by byte as a test writes it."""

from __future__ import annotations

import asyncio
import struct
import tempfile
from dataclasses import dataclass

from tests.api.helpers import CLIENT
from tests.gateway.conftest import CurlResult

from proxyfleet.common.domain import socks5


async def socks_curl(
    port: int, url: str, username: str = "crawler", token: str = CLIENT, ca_file: str = ""
) -> CurlResult:
    """curl through the SOCKS5 listener on `port`, names sent to it unresolved."""
    with tempfile.NamedTemporaryFile(prefix="pf-curl-heads-") as heads:
        argv = ["curl", "-sS", "--max-time", "10", "--socks5-hostname", f"127.0.0.1:{port}"]
        argv += ["--proxy-user", f"{username}:{token}", "-D", heads.name, url]
        argv += ["--cacert", ca_file] if ca_file else []
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
        head = heads.read().decode(errors="replace")
    assert proc.returncode is not None
    return CurlResult(proc.returncode, head, out, err.decode(errors="replace"))


def domain(host: str) -> bytes:
    """A request's address for a name: ATYP domain, its length, the name."""
    name = host.encode()
    return bytes([socks5.ATYP_DOMAIN, len(name)]) + name


def ipv4(address: str = "127.0.0.1") -> bytes:
    return bytes([socks5.ATYP_IPV4, *(int(part) for part in address.split("."))])


def socks_request(address: bytes, port: int, command: int = socks5.CMD_CONNECT) -> bytes:
    return bytes([socks5.VERSION, command, 0]) + address + struct.pack("!H", port)


def auth(username: str = "crawler", token: str = CLIENT) -> bytes:
    return socks5.auth_request(username, token)


GREETING = bytes([socks5.VERSION, 1, socks5.USER_PASS])


@dataclass
class SocksReply:
    """What the gateway answered to a handshake: its method choice, auth status and
    reply (b"" for each it did not send before closing)."""

    choice: bytes
    status: bytes
    reply: bytes
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    @property
    def code(self) -> int | None:
        """The reply's REP field; None when there was no reply."""
        return self.reply[1] if len(self.reply) >= 2 else None

    async def closed(self) -> bool:
        """Whether the gateway closes the connection (within 5 s) with nothing more sent."""
        async with asyncio.timeout(5):
            try:
                return await self.reader.read() == b""
            except ConnectionResetError:
                return True

    def close(self) -> None:
        self.writer.transport.abort()


async def _read(reader: asyncio.StreamReader, n: int) -> bytes:
    try:
        return await reader.readexactly(n)
    except asyncio.IncompleteReadError as exc:
        return exc.partial
    except ConnectionResetError:
        return b""


async def handshake(
    port: int,
    target: bytes,
    *,
    username: str = "crawler",
    token: str = CLIENT,
    greeting: bytes = GREETING,
) -> SocksReply:
    """Greeting, username/password and `target` (a request's bytes), each answer awaited
    as a client does; stops at the first answer that is not a success."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = SocksReply(b"", b"", b"", reader, writer)
    async with asyncio.timeout(15):
        writer.write(greeting)
        got.choice = await _read(reader, 2)
        if got.choice != bytes([socks5.VERSION, socks5.USER_PASS]):
            return got
        writer.write(auth(username, token))
        got.status = await _read(reader, 2)
        if got.status != b"\x01\x00":
            return got
        writer.write(target)
        got.reply = await _read(reader, 10)  # the gateway's replies bind 0.0.0.0:0
    return got
