"""One probe's connection as a bare asyncio Protocol: what the probe needs (connect, write,
read a response head or a body, upgrade to TLS, abort) and no more.

Streams (StreamReader/Writer) cost a reader, a writer, a protocol and a future or two per
read on top of this; at a thousand probes a second that overhead shows, so the prober
keeps one object per connection and one future per wait.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import cast

from proxyfleet.health import probe
from proxyfleet.health.probe import FailureKind, ProbeFailure

_HEAD_END = b"\r\n\r\n"


class ProbeConnection(asyncio.Protocol):
    """A TCP connection to a proxy (TLS to it first for an https proxy), then, once the
    tunnel is open, TLS to the target through it."""

    __slots__ = ("_buf", "_closed", "_error", "_scanned", "_transport", "_waiter", "stage")

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._scanned = 0
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._error: BaseException | None = None
        self.stage = "before connecting"
        """How far the probe got, for the message of a timeout."""

    # ---- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing asyncio's ABCs
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        self._wake()

    def eof_received(self) -> bool:
        self._closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    # ---- what the prober calls -----------------------------------------------------------

    async def connect(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        self.stage = "connecting to the proxy"
        try:
            await loop.create_connection(lambda: self, host, port)
        except OSError as exc:
            message = f"proxy unreachable: {os_error(exc)}"
            raise ProbeFailure(FailureKind.UNREACHABLE, message) from None

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._closed:
            self._transport.write(data)

    async def read_head(self, who: str) -> bytes:
        """The response head, up to and including the blank line (kept out of the buffer)."""
        kind = FailureKind.PROXY if who == "proxy" else FailureKind.TARGET
        while True:
            end = self._buf.find(_HEAD_END, max(0, self._scanned - 3))
            if end >= 0:
                head = bytes(self._buf[: end + 4])
                del self._buf[: end + 4]
                self._scanned = 0
                return head
            self._scanned = len(self._buf)
            if self._scanned > probe.MAX_HEAD_BYTES:
                raise ProbeFailure(kind, f"{who} sent a response head that is too long")
            if self._closed:
                raise self._closed_failure(who)
            await self._wait()

    async def read_exactly(self, n: int, who: str = "proxy") -> bytes:
        """The next `n` bytes (a SOCKS5 answer's length is known before it arrives)."""
        while len(self._buf) < n:
            if self._closed:
                raise self._closed_failure(who)
            await self._wait()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def _closed_failure(self, who: str) -> ProbeFailure:
        kind = FailureKind.PROXY if who == "proxy" else FailureKind.TARGET
        if self._error is not None:
            return ProbeFailure(kind, f"{who} connection failed: {os_error(self._error)}")
        return ProbeFailure(kind, f"{who} closed the connection before answering")

    async def read_body(self, head: probe.ResponseHead) -> bytes:
        """The body, at most MAX_BODY_BYTES; a short or failed read gives what arrived."""
        length = head.content_length
        chunked = probe.is_chunked(head)
        want = probe.MAX_BODY_BYTES if length is None or chunked else length
        want = min(want, probe.MAX_BODY_BYTES)
        while len(self._buf) < want and not self._closed:
            await self._wait()
        data = bytes(self._buf[:want])
        del self._buf[:want]
        return probe.dechunk(data) if chunked else data

    async def start_tls(self, context: ssl.SSLContext, host: str, who: str = "target") -> None:
        """TLS to `host`: the target inside the tunnel, or an https proxy itself (`who` =
        "proxy", a failure then the proxy's); this protocol then sees the decrypted bytes."""
        transport = self._transport
        assert transport is not None
        self.stage = f"in the TLS handshake with the {who}"
        kind = FailureKind.TLS if who == "target" else FailureKind.PROXY
        link = "tunnel" if who == "target" else "proxy"
        loop = asyncio.get_running_loop()
        try:
            tls = await loop.start_tls(transport, self, context, server_hostname=host)
        except ssl.SSLCertVerificationError as exc:
            message = f"{who} certificate rejected: {exc.verify_message or exc.reason}"
            raise ProbeFailure(kind, message) from None
        except ssl.SSLError as exc:
            raise ProbeFailure(kind, f"TLS with the {who} failed: {exc.reason}") from None
        except (OSError, EOFError) as exc:  # EOFError: uvloop's SSL, on a close mid-handshake
            message = f"{link} closed during the TLS handshake: {os_error(exc)}"
            raise ProbeFailure(kind, message) from None
        if tls is None:  # the loop closed the transport under us
            raise ProbeFailure(kind, f"{link} closed during the TLS handshake")
        self._transport = tls
        self._closed = False
        self._error = None

    @property
    def ssl_object(self) -> ssl.SSLObject | None:
        if self._transport is None:
            return None
        obj = self._transport.get_extra_info("ssl_object")
        return obj if isinstance(obj, ssl.SSLObject) else None

    def close(self) -> None:
        """Abort: a probe never reuses its connection, and a graceful TLS close could
        linger up to 30 s waiting for the peer's close_notify."""
        if self._transport is not None:
            self._transport.abort()
            self._transport = None


def os_error(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    return str(exc) or type(exc).__name__
