"""The sockets of a relayed connection as asyncio Protocols, not streams.

Until a side is piped to another, what it receives is kept, so a request or response head
can be read from it (bounded). Once piped, each chunk it receives is written straight into
its sink's transport from the callback, and the sink's flow control pauses reading here
while the sink's write buffer is full. No copy task, no await per chunk: against streams
with two copy tasks, gateway CPU per tunnel fell from 786-805 us to 641 us
(GW2 in docs/decisions/gateway.md).

A plain-HTTP body is metered instead (`meter_to`): what arrives goes to the sink until
its `framing.Body` is complete, and what follows is kept as the next head, so a client
connection carries one request after another. A piped side (a tunnel) never meters.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

from prometheus_client import Counter

from proxyfleet.gateway.framing import BadFraming, Body

HEAD_END = b"\r\n\r\n"


class HeadTooLarge(Exception):
    """No complete head within the limit."""


class Side(asyncio.Protocol):
    """One socket: it buffers until piped, then forwards (or meters a body, then buffers
    again); `eof` and `lost` say how it ended, `broken` why a metered body failed, and
    `watch` (if set) is called on each of those and when a metered body is complete."""

    def __init__(
        self,
        received: Counter | None = None,
        on_made: Callable[[Side], None] | None = None,
        limit: int = 65_536,
    ) -> None:
        self.transport: asyncio.Transport | None = None
        self.eof = False  # the peer finished sending (it may still read)
        self.lost = False  # the connection is gone
        self.broken = ""
        """Why a metered body could not be relayed (its framing, or the connection ended
        inside it); "" while none failed."""
        self.last_active = time.monotonic()
        self.relayed = 0  # bytes received and passed on (piped or metered): accounting's
        self.watch: Callable[[], None] | None = None
        self._received = received
        self._on_made = on_made
        self._limit = limit
        self._buffer = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._sink: Side | None = None
        self._source: Side | None = None
        self._sink_full = False
        self._metering: tuple[Body, Side] | None = None
        self._over_limit = False
        self._abort_later: asyncio.TimerHandle | None = None

    # ---- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport; they implement it.
        self.transport = cast(asyncio.Transport, transport)
        if self._on_made is not None:
            self._on_made(self)

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        sink = self._sink
        if sink is None:
            if self._metering is not None:
                self._metered(data)
                return
            self._keep(data)
            self._wake()
            return
        sink.write(data)
        self.relayed += len(data)
        if self._received is not None:
            self._received.inc(len(data))

    def eof_received(self) -> bool:
        self.eof = True
        if self._sink is not None:
            self._sink.write_eof()
        elif self._metering is not None:
            self._body_ended()
        self._wake()
        self._changed()
        return True  # half-closed: the other direction may still flow

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._abort_later is not None:
            self._abort_later.cancel()
        if self._metering is not None:
            self._body_ended()
        self._wake()
        self._changed()

    def pause_writing(self) -> None:
        self._sink_full = True
        if self._source is not None and self._source.transport is not None:
            self._source.transport.pause_reading()

    def resume_writing(self) -> None:
        self._sink_full = False
        if self._source is not None and self._source.transport is not None:
            self._source.transport.resume_reading()

    # ---- use ------------------------------------------------------------------------

    async def read_head(self) -> bytes:
        """The next head (through the blank line); what follows stays buffered. Empty
        lines before it are dropped (RFC 9112 2.2: some clients send a CRLF after a
        body). Raises HeadTooLarge, or IncompleteReadError when the connection ends
        first."""
        while True:
            while self._buffer.startswith(b"\r\n"):
                del self._buffer[:2]
            end = self._buffer.find(HEAD_END)
            if end >= 0:
                head = bytes(self._buffer[: end + len(HEAD_END)])
                del self._buffer[: end + len(HEAD_END)]
                return head
            if len(self._buffer) > self._limit:
                raise HeadTooLarge
            if self.eof or self.lost:
                raise asyncio.IncompleteReadError(bytes(self._buffer), None)
            if self._over_limit:  # a body took what was kept: room for a head again
                self._over_limit = False
                self._read_again()
            self._waiter = asyncio.get_running_loop().create_future()
            try:  # inline (not `_more`): once per head of every tunnel
                await self._waiter
            finally:
                self._waiter = None

    async def read_exactly(self, n: int) -> bytes:
        """The next `n` bytes (a SOCKS answer); IncompleteReadError if the connection ends."""
        while len(self._buffer) < n:
            if self.eof or self.lost:
                raise asyncio.IncompleteReadError(bytes(self._buffer), n)
            await self._more()
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    async def wait_data(self) -> None:
        """Until a byte is kept (a next head starts) or the connection ended."""
        while not self._buffer and not self.eof and not self.lost:
            await self._more()

    async def _more(self) -> None:
        """Until something arrives (or the connection ends)."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    @property
    def kept(self) -> int:
        """Bytes received and kept (not piped or metered yet)."""
        return len(self._buffer)

    @property
    def metering(self) -> bool:
        """A body is being metered from this side (`meter_to`) and is not complete."""
        return self._metering is not None

    @property
    def piped(self) -> bool:
        return self._sink is not None

    def pipe_to(self, sink: Side) -> None:
        """From now on what this side receives (and what it kept) goes to `sink`."""
        self._sink, sink._source = sink, self
        if self._buffer:
            sink.write(bytes(self._buffer))
            self.relayed += len(self._buffer)
            self._buffer.clear()
        if self.eof:
            sink.write_eof()
        if (t := self.transport) is not None and not self.lost:  # the sink's flow control
            (t.pause_reading if sink._sink_full else t.resume_reading)()

    def meter_to(self, sink: Side, body: Body, first: bytes = b"") -> None:
        """Write `first` to `sink`, then what this side kept and receives until `body` is
        complete; what follows is kept (the next head). Raises BadFraming before anything
        is written when what was kept breaks the framing already; a break found later
        sets `broken`. `watch` is called once the body is complete or broken."""
        taken = 0
        if self._buffer and not body.done:
            taken = body.feed(bytes(self._buffer))
        if first or taken:
            sink.write(first + bytes(self._buffer[:taken]))
            del self._buffer[:taken]
            self.relayed += taken
            if self._received is not None:
                self._received.inc(taken)
        if body.done:
            if self._over_limit:  # `_keep` paused reading: paused, no EOF (a close) is seen
                self._read_again()
            return
        if self.eof or self.lost:  # nothing more will come
            self.broken = "" if body.at_eof() else "the connection ended inside a body"
            return
        self._metering = (body, sink)
        sink._source = self
        if (t := self.transport) is not None:  # the sink's flow control
            (t.pause_reading if sink._sink_full else t.resume_reading)()

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def write_eof(self) -> None:
        t = self.transport
        if t is not None and not t.is_closing() and t.can_write_eof():
            t.write_eof()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def close_after_write(self, within: float) -> None:
        """Close once what was written is sent; abort if that takes over `within` s."""
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.close()
        self._abort_later = asyncio.get_running_loop().call_later(within, self.transport.abort)

    def _metered(self, data: bytes) -> None:
        assert self._metering is not None
        body, sink = self._metering
        try:
            taken = body.feed(data)
        except BadFraming as exc:
            self.broken = str(exc)
            self._metering = None
            if self.transport is not None:
                self.transport.pause_reading()  # nothing more of it is relayed
            self._changed()
            return
        sink.write(data if taken == len(data) else data[:taken])
        self.relayed += taken
        if self._received is not None:
            self._received.inc(taken)
        if body.done:
            self._metering = None
            self._release(sink)
            if taken < len(data):
                self._keep(data[taken:])
            self._wake()
            self._changed()

    def _body_ended(self) -> None:
        """The connection ended (EOF or lost) while a body was metered."""
        assert self._metering is not None
        body, sink = self._metering
        self._metering = None
        self._release(sink)
        if not body.at_eof():
            self.broken = "the connection ended inside a body"

    def _release(self, sink: Side) -> None:
        """The body is over: `sink`'s flow control no longer holds this side back."""
        if sink._source is self:
            sink._source = None
        self._read_again()

    def _keep(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) > self._limit and self.transport is not None:
            self.transport.pause_reading()  # a head too large: read_head says so
            self._over_limit = True

    def _read_again(self) -> None:
        t = self.transport
        if t is None or self.eof or self.lost or t.is_closing():
            return
        if len(self._buffer) <= self._limit:
            self._over_limit = False
            t.resume_reading()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _changed(self) -> None:
        if self.watch is not None:
            self.watch()
