"""The peers of plain-HTTP keep-alive tests: a local HTTP/1.1 origin (behind the real
Squids) with a route per way a body ends, a client that speaks through h11 (a parser
independent of the gateway's), and a scripted upstream proxy that answers with exact
bytes (framing no Squid would send)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import h11
from tests.api.helpers import CLIENT

CHUNKS = [b"first,", b"second,", b"third"]


@dataclass
class Origin:
    """An HTTP/1.1 server on 127.0.0.x. Routes: /len/<n> (Content-Length), /chunked
    (CHUNKS, chunked), /nocontent (204), /close/<n> (no length: the body ends with the
    connection), /status/<code>, /echo (the request body back, with its length)."""

    host: str
    port: int = 0
    connections: int = 0
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)
    """(method, path, body) of each request, in order."""
    heads: list[bytes] = field(default_factory=list)
    """Each request's head as it came."""
    peers: list[str] = field(default_factory=list)
    """The address each connection came from (an upstream's exit)."""
    open: set[asyncio.StreamWriter] = field(default_factory=set)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.peers.append(writer.get_extra_info("peername")[0])
        self.open.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                self.heads.append(head)
                method, path, headers = _request_head(head)
                body = await _request_body(reader, headers)
                self.requests.append((method, path, body))
                answer, close = _answer(method, path, body)
                writer.write(answer)
                await writer.drain()
                if close or headers.get("connection", "").lower() == "close":
                    return
        finally:
            self.open.discard(writer)
            writer.close()


def _request_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    path = "/" + target.split("/", 3)[3] if target.startswith("http://") else target
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


async def _request_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
            pass
        return body
    return await reader.readexactly(int(headers.get("content-length", "0")))


def _answer(method: str, path: str, body: bytes) -> tuple[bytes, bool]:
    """The response bytes, and whether the connection closes after them."""
    parts = path.strip("/").split("/")
    head = "HTTP/1.1 200 OK\r\n"
    if parts[0] == "len":
        payload = b"L" * int(parts[1])
        framing = f"Content-Length: {len(payload)}\r\n"
        if method == "HEAD":
            return (head + framing + "\r\n").encode(), False
        return (head + framing + "\r\n").encode() + payload, False
    if parts[0] == "chunked":
        chunks = b"".join(b"%x;n=%d\r\n%s\r\n" % (len(c), i, c) for i, c in enumerate(CHUNKS))
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + chunks + b"0\r\n\r\n", False
    if parts[0] == "nocontent":
        return b"HTTP/1.1 204 No Content\r\n\r\n", False
    if parts[0] == "close":
        return (head + "Connection: close\r\n\r\n").encode() + b"C" * int(parts[1]), True
    if parts[0] == "status":
        return f"HTTP/1.1 {parts[1]} X\r\nContent-Length: 2\r\n\r\nno".encode(), False
    if parts[0] == "echo":
        return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body, False
    return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", False


@contextlib.asynccontextmanager
async def origin(host: str = "127.0.0.1") -> AsyncIterator[Origin]:
    state = Origin(host)
    server = await asyncio.start_server(state.serve, host, 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
        for writer in list(state.open):  # the Squids keep theirs open: end those handlers
            writer.transport.abort()
        await asyncio.sleep(0)


# ---- the client -----------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    """Lowercase names; a repeated header's last value."""
    body: bytes
    keeps: bool
    """h11 says the connection may carry another request."""

    @property
    def lease_id(self) -> str:
        return self.headers.get("x-proxyfleet-lease-id", "")


class Client:
    """One client connection to the gateway; each exchange parsed by an h11 connection
    of its own (so requests can be pipelined), the bytes after a response kept for the
    next."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._left = b""

    @classmethod
    async def open(cls, port: int) -> Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    def send(
        self,
        method: str,
        url: str,
        *,
        body: bytes = b"",
        chunked: bool = False,
        headers: tuple[tuple[str, str], ...] = (),
        username: str = "crawler",
        version: bytes = b"1.1",
    ) -> h11.Connection:
        """Write a request; the h11 connection that reads its answer (`receive`)."""
        conn = h11.Connection(h11.CLIENT)
        creds = base64.b64encode(f"{username}:{CLIENT}".encode()).decode()
        fields = [("Host", url.split("/")[2]), ("Proxy-Authorization", f"Basic {creds}")]
        if chunked:
            fields.append(("Transfer-Encoding", "chunked"))
        elif body:
            fields.append(("Content-Length", str(len(body))))
        request = h11.Request(method=method, target=url, headers=[*fields, *headers])
        data = conn.send(request) or b""
        if version != b"1.1":  # h11 sends only HTTP/1.1 (and reads any answer)
            data = data.replace(b" HTTP/1.1\r\n", b" HTTP/" + version + b"\r\n", 1)
        if chunked:  # in two chunks
            data += (conn.send(h11.Data(data=body[:3])) or b"") + (
                conn.send(h11.Data(data=body[3:])) or b""
            )
        elif body:
            data += conn.send(h11.Data(data=body)) or b""
        data += conn.send(h11.EndOfMessage()) or b""
        self.writer.write(data)
        return conn

    async def receive(self, conn: h11.Connection, within: float = 10.0) -> Reply:
        if self._left:  # b"" would tell h11 the connection ended
            conn.receive_data(self._left)
        self._left = b""
        status, headers, body = 0, {}, b""
        async with asyncio.timeout(within):
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await self.reader.read(65_536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                    headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
        self._left = conn.trailing_data[0]
        keeps = conn.our_state is h11.DONE and conn.their_state is h11.DONE
        return Reply(status, headers, body, keeps)

    async def request(self, method: str, url: str, **kwargs: object) -> Reply:
        return await self.receive(self.send(method, url, **kwargs))  # type: ignore[arg-type]

    async def closed(self, within: float = 5.0) -> bool:
        """Whether the gateway closes the connection (nothing more comes) within `within`."""
        try:
            async with asyncio.timeout(within):
                return await self.reader.read(1) == b""
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.writer.transport.abort()


# ---- a scripted upstream proxy ----------------------------------------------------------------

WAIT = b"(no answer)"
THEN_CLOSE = b"(then close)"


@dataclass
class Scripted:
    """A stand-in for Squid: to each request head it writes the next answer of `answers`
    as it is; b"" closes the connection instead of answering, WAIT answers nothing, an
    answer ending with THEN_CLOSE closes the connection after it."""

    answers: list[bytes]
    port: int = 0
    connections: int = 0
    heads: list[bytes] = field(default_factory=list)
    hold: asyncio.Event | None = None
    """When set: an answer's part after a b"|" waits for this event."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.answers:
                try:
                    self.heads.append(await reader.readuntil(b"\r\n\r\n"))
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                answer = self.answers.pop(0)
                if not answer:
                    return
                if answer is WAIT:
                    break
                if answer.endswith(THEN_CLOSE):
                    writer.write(answer.removesuffix(THEN_CLOSE))
                    return
                if self.hold is None:
                    writer.write(answer)
                    continue
                first, _, rest = answer.partition(b"|")
                writer.write(first)
                await self.hold.wait()
                writer.write(rest)
            await reader.read()  # until the gateway closes its side
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def scripted(*answers: bytes, hold: asyncio.Event | None = None) -> AsyncIterator[Scripted]:
    state = Scripted(list(answers), hold=hold)
    server = await asyncio.start_server(state.serve, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
