"""One plain-HTTP request and its response between a client connection and an upstream
one. The request head goes up with its body metered by its framing; interim answers (1xx)
go down as they come; the final head is returned for the caller to look at (and rewrite),
then the response body comes down, metered too. Neither connection is closed here: what
is left says whether each may carry another request."""

from __future__ import annotations

import asyncio
import time

from proxyfleet.gateway import framing, wire
from proxyfleet.gateway.framing import BadFraming, Body
from proxyfleet.gateway.refusals import Refused
from proxyfleet.gateway.splice import HeadTooLarge, Side


class NoResponse(Exception):
    """The upstream sent no usable response head; nothing of an answer reached the client."""

    def __init__(self, why: str, *, silent: bool) -> None:
        super().__init__(why)
        self.silent = silent
        """Not a byte came before the upstream closed: a kept connection it had closed
        meanwhile, worth one more try on a new one."""


class Cut(ConnectionError):
    """The exchange broke after the response head went out: both connections are aborted
    (the client sees a body cut short)."""


def bad_request_body(why: str) -> Refused:
    return Refused(
        400, f"request body: {why}", "bad_request", wire.proxy_status("http_request_error")
    )


class Exchange:
    def __init__(self, req: wire.RequestHead, client: Side, upstream: Side) -> None:
        self.req = req
        self.client = client
        self.upstream = upstream
        self.body = framing.request_body(req)
        self.bodyless = self.body.done
        """No request body: the request may be sent again as it is."""

    def send(self, head: bytes) -> None:
        """The request head, then its body as it comes (Refused 400 when what the client
        sent already breaks its framing; nothing went up then)."""
        try:
            self.client.meter_to(self.upstream, self.body, first=head)
        except BadFraming as exc:
            raise bad_request_body(str(exc)) from None

    async def response(self, within: float) -> tuple[framing.ResponseHead, bytes]:
        """The final response head, parsed and as sent; interim ones (1xx, not 101) go
        to an HTTP/1.1 client as they come. Raises NoResponse, Refused (400: the
        client's body broke its framing) or ConnectionResetError (the client left)."""
        client, upstream = self.client, self.upstream

        def check() -> None:  # a client that breaks its body or leaves ends the wait
            if client.broken or client.lost:
                upstream.abort()

        client.watch = check
        interim = False
        pushing: _UploadDeadline | None = None
        try:
            async with asyncio.timeout(within) as wait:
                pushing = _UploadDeadline(wait, within, client)
                while True:
                    raw = await upstream.read_head()
                    resp = framing.parse_response(raw)
                    if not 100 <= resp.status < 200 or resp.status == 101:
                        return resp, raw
                    interim = True
                    if self.req.version == "HTTP/1.1":
                        client.write(raw)
        except (TimeoutError, asyncio.IncompleteReadError, HeadTooLarge, OSError) as exc:
            if client.lost:
                raise ConnectionResetError("the client left") from None
            if client.broken:
                raise bad_request_body(client.broken) from None
            silent = isinstance(exc, asyncio.IncompleteReadError) and not (exc.partial or interim)
            raise NoResponse(f"no response head ({type(exc).__name__})", silent=silent) from None
        except BadFraming as exc:
            raise NoResponse(str(exc), silent=False) from None
        finally:
            client.watch = None
            if pushing is not None:
                pushing.cancel()

    async def relay(self, body: Body, head: bytes) -> None:
        """`head` to the client, then the response body until it is complete. Raises
        BadFraming when what came with the head breaks its framing already (nothing
        reached the client), Cut when it breaks later or a side leaves."""
        client, upstream = self.client, self.upstream
        upstream.meter_to(client, body, first=head)
        done = asyncio.get_running_loop().create_future()

        def check() -> None:
            over = not upstream.metering or client.lost or client.broken
            if over and not done.done():
                done.set_result(None)

        client.watch = upstream.watch = check
        try:
            check()
            await done
        finally:
            client.watch = upstream.watch = None
        if upstream.broken or client.lost or client.broken:
            upstream.abort()
            client.abort()
            raise Cut(upstream.broken or client.broken or "the client left")


class _UploadDeadline:
    """While a request body still comes in, the wait for the answer ends `within` after
    its latest bytes rather than after the head: an upstream cannot be expected to answer
    an upload it is still receiving, and a client that stops sending still meets the
    deadline. Looked at every second (or a quarter of `within`) until cancelled."""

    def __init__(self, wait: asyncio.Timeout, within: float, client: Side) -> None:
        self._wait = wait
        self._within = within
        self._client = client
        self._every = min(1.0, within / 4)  # well before the deadline it moves
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(self._every, self._push)

    def _push(self) -> None:
        if not self._client.metering:
            return  # the body is in: the deadline set last stands
        quiet = time.monotonic() - self._client.last_active
        self._wait.reschedule(self._loop.time() + self._within - quiet)
        self._handle = self._loop.call_later(self._every, self._push)

    def cancel(self) -> None:
        self._handle.cancel()
