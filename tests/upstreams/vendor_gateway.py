"""A stand-in for a residential vendor's rotating gateway: one HTTP proxy endpoint on
loopback (CONNECT, and plain `http://` requests one per connection), usernames as in
`vendor_names`, one password. Each session id leaves from an exit address of its own,
counting up from `exit_base` in the order sessions first appear; a username without a
session gets a new exit per connection. Bad or missing credentials: 407.

It runs on an event loop in a thread of its own, so sync tests (curl in a subprocess) and
async ones alike can use it; `sessions()` tells what it saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from tests.upstreams.vendor_names import (
    BadHead,
    RequestHead,
    absolute_form,
    basic_credentials,
    exit_address,
    loopback_destination,
    origin_request,
    parse_head,
    parse_username,
    split_authority,
    vendor_username,
)

from proxyfleet.common.wire.models import proxy_url

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT = 10.0
CUSTOMER, PASSWORD = "acme", "vendor-pw:with@signs"
"""The fixture's account: the password needs percent-encoding in a URL."""


@dataclass(frozen=True, slots=True)
class VendorSession:
    """A session id the gateway saw, and what it did with it."""

    session: str
    country: str
    """The country its first connection asked for ("" for any)."""
    exit_address: str
    connections: int
    """Connections that asked for it with the right password."""


@dataclass
class VendorGateway:
    host: str
    port: int
    customer: str
    password: str
    exit_base: str
    """The first session's exit address; later ones count up from it."""
    _sessions: dict[str, VendorSession] = field(default_factory=dict)
    _rotating: list[str] = field(default_factory=list)
    _refused: int = 0
    _exits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def username(self, session: str = "", country: str = "") -> str:
        """`customer-<customer>[-session-<session>][-country-<country>]`."""
        return vendor_username(self.customer, session, country)

    def url(self, session: str = "", country: str = "", scheme: str = "http") -> str:
        """The gateway's proxy URL with this session's username (percent-encoded)."""
        return proxy_url(
            scheme, self.host, self.port, self.username(session, country), self.password
        )

    def sessions(self) -> dict[str, VendorSession]:
        """Session id -> what the gateway saw of it, so far."""
        with self._lock:
            return dict(self._sessions)

    def rotating_exits(self) -> list[str]:
        """The exit of each connection that asked for no session, in order."""
        with self._lock:
            return list(self._rotating)

    def refused(self) -> int:
        """Requests answered 407 (bad or missing credentials)."""
        with self._lock:
            return self._refused

    def _admit(self, head: RequestHead) -> str | None:
        """The exit address for an authorised request; None (counted) for a 407."""
        credentials = basic_credentials(head.header("Proxy-Authorization"))
        wanted = parse_username(credentials[0]) if credentials else None
        with self._lock:
            if (
                credentials is None
                or wanted is None
                or wanted.customer != self.customer
                or credentials[1] != self.password
            ):
                self._refused += 1
                return None
            if not wanted.session:
                self._rotating.append(self._next_exit())
                return self._rotating[-1]
            seen = self._sessions.get(wanted.session)
            if seen is None:
                seen = VendorSession(wanted.session, wanted.country, self._next_exit(), 0)
            self._sessions[wanted.session] = replace(seen, connections=seen.connections + 1)
            return seen.exit_address

    def _next_exit(self) -> str:
        self._exits += 1
        return exit_address(self.exit_base, self._exits - 1)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT):
                head = parse_head(await reader.readuntil(b"\r\n\r\n"))
            await self._serve(head, reader, writer)
        except (BadHead, asyncio.LimitOverrunError):
            await _answer(writer, "400 Bad Request")
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _serve(
        self, head: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if head.method == "CONNECT":
            host, port = split_authority(head.target)
            path = ""
        else:
            host, port, path = absolute_form(head.target)
        source = self._admit(head)
        if source is None:
            await _answer(writer, "407 Proxy Authentication Required", auth=True)
            return
        if not loopback_destination(host):
            await _answer(writer, "403 Forbidden")
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        except OSError:
            await _answer(writer, "502 Bad Gateway")
            return
        if path:
            up_writer.write(origin_request(head, path))
        else:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _answer(writer: asyncio.StreamWriter, status: str, *, auth: bool = False) -> None:
    extra = 'Proxy-Authenticate: Basic realm="vendor"\r\n' if auth else ""
    writer.write(
        f"HTTP/1.1 {status}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until `source` ends, then end `sink`'s writing half."""
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()


@contextlib.contextmanager
def running_vendor_gateway(
    customer: str = CUSTOMER,
    password: str = PASSWORD,
    exit_base: str = "127.0.0.10",
) -> Iterator[VendorGateway]:
    """A gateway on a free 127.0.0.1 port, served from a thread until the block ends."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="vendor-gateway", daemon=True)
    thread.start()
    handlers: set[asyncio.Task[None]] = set()
    gateway = VendorGateway("127.0.0.1", 0, customer, password, exit_base)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await gateway.handle(reader, writer)
        finally:
            handlers.discard(task)

    async def start() -> asyncio.Server:
        return await asyncio.start_server(handle, "127.0.0.1", 0, limit=HEAD_LIMIT)

    async def stop(server: asyncio.Server) -> None:
        server.close()
        for task in list(handlers):  # open tunnels: a 3.11 server's close leaves them be
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()

    server = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    gateway.port = int(server.sockets[0].getsockname()[1])
    try:
        yield gateway
    finally:
        asyncio.run_coroutine_threadsafe(stop(server), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
