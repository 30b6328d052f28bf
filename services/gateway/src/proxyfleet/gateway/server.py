"""The proxy endpoint: one asyncio server; each connection's head read (bounded, timed),
its token and username checked, its lease acquired (`admission`), then relayed
(`relaying`): a tunnel, or plain-HTTP requests one after another (keep-alive), each on the
lease of the one before while it is for the same host; a stop drains what is open. With
--socks-port, a second server takes SOCKS5 clients (`socks_server`) into the same
connections, leases and drain.

Every answer the gateway writes itself is built by `wire`; a client error is a 4xx and
ends that connection only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

from proxyfleet.common.observability.logging import get_logger
from proxyfleet.gateway import framing, wire
from proxyfleet.gateway.admission import Admission
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import BYTES_UP, TUNNELS
from proxyfleet.gateway.refusals import AUTHENTICATE, Refused, busy
from proxyfleet.gateway.relaying import Caller, Plain, Relaying
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.socks_server import Socks5Endpoint
from proxyfleet.gateway.splice import HeadTooLarge, Side
from proxyfleet.gateway.tunnels import Tunnels

log = get_logger(__name__)


class Gateway:
    def __init__(
        self,
        settings: GatewaySettings,
        leaser: Leaser,
        admission: Admission,
        tunnels: Tunnels,
        max_connections: int,
    ) -> None:
        self._s = settings
        self._max_connections = max_connections
        self._admission = admission
        self._tunnels = tunnels
        self._relaying = Relaying(settings, leaser, tunnels)
        self._socks = Socks5Endpoint(settings, admission, self._relaying, self._check_capacity)
        self.port = 0
        self.socks_port = 0
        """The SOCKS5 listener's port once listening (0: none)."""
        self.listening = asyncio.Event()
        self.finished = asyncio.Event()
        """Set once the endpoint has stopped and every connection ended (or failed to
        start): what the components serving open connections run until."""
        self._handlers: dict[Side, asyncio.Task[None]] = {}
        """Each client connection's handler, until it ends (its lease released)."""
        self._idle: set[Side] = set()
        """Plain-HTTP client connections waiting for their next request."""

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await self._serve_until(stop)
        finally:
            self.finished.set()

    async def _serve_until(self, stop: asyncio.Event) -> None:
        servers = [await self._listen(self._s.port, self._serve)]
        self.port = servers[0].sockets[0].getsockname()[1]
        log.info("gateway.listening", host=self._s.host, port=self.port)
        try:
            if self._s.socks_port:
                servers.append(await self._listen(self._s.socks_port, self._socks.serve))
                self.socks_port = servers[1].sockets[0].getsockname()[1]
                log.info("gateway.socks5_listening", host=self._s.host, port=self.socks_port)
            self.listening.set()
            await stop.wait()
        finally:
            for server in servers:
                server.close()
            self._relaying.stopping = True  # answers say Connection: close from now on
            for client in list(self._idle):  # a kept connection between requests ends now
                client.close_after_write(within=1.0)
            await self._drain()
            self._tunnels.close_all("stopping")
            for client in list(self._handlers):
                client.abort()  # also those still waiting for a grant or an upstream
            if self._handlers:  # each releases its lease as it ends
                await asyncio.wait(self._handlers.values(), timeout=5)

    async def _listen(
        self, port: int, serve: Callable[[Side], Coroutine[Any, Any, None]]
    ) -> asyncio.Server:
        """A listener whose connections `serve` handles, counted among the connections a
        stop drains."""

        def accepted(client: Side) -> None:
            task = asyncio.get_running_loop().create_task(serve(client))
            self._handlers[client] = task
            task.add_done_callback(lambda _: self._handlers.pop(client, None))

        return await asyncio.get_running_loop().create_server(
            lambda: Side(BYTES_UP, accepted, self._s.max_header_bytes),
            self._s.host,
            port,
            backlog=4096,
            reuse_port=self._s.reuse_port or None,
        )

    def _check_capacity(self) -> None:
        """Refused (busy) when more connections are open than served at once (the one
        asking counted)."""
        if len(self._handlers) > self._max_connections:
            raise busy(self._max_connections)

    async def _drain(self) -> None:
        """Let open connections finish, within drain_seconds (no new ones come)."""
        if not self._handlers or self._s.drain_seconds <= 0:
            return
        log.info("gateway.draining", connections=len(self._handlers),
                 within_s=self._s.drain_seconds)  # fmt: skip
        await asyncio.wait(self._handlers.values(), timeout=self._s.drain_seconds)
        if self._handlers:
            log.info("gateway.drain_ended", closing=len(self._handlers))

    async def _serve(self, client: Side) -> None:
        refused: Refused | None = None
        try:
            await self._handle(client)
            return  # the relay closed it
        except Refused as r:
            refused = r
            TUNNELS.labels(r.outcome).inc()
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away, or stopped sending
        except Exception as exc:  # one connection must never take the gateway down
            TUNNELS.labels("error").inc()
            log.exception("gateway.connection_failed", error=repr(exc))
        if refused is None:
            client.abort()
        else:
            client.write(wire.response(refused.status, refused.headers, f"{refused}\n"))
            client.close_after_write(within=1.0)

    async def _handle(self, client: Side) -> None:
        req = await self._request(client)
        self._check_capacity()
        caller = self._caller(req)
        self._admission.admit(caller)
        owner = caller.owner  # the connection counts against its first request's client
        try:
            if not req.is_connect:
                connect = await self._plain(req, caller, client)
                if connect is None:
                    return
                req, caller = connect  # after plain requests, the connection is a tunnel
            await self._admission.lease(caller, req.host)
            try:
                await self._relaying.tunnel(req, caller, client)
            finally:
                await self._admission.end(caller)
        finally:
            self._admission.leave(owner)

    async def _plain(
        self, req: wire.RequestHead, caller: Caller, client: Side
    ) -> tuple[wire.RequestHead, Caller] | None:
        """Plain-HTTP requests, answered in order (a pipelined one waits its turn), while
        both sides keep the connection; then it closes. A CONNECT that follows is
        returned (its tunnel gets a lease of its own)."""
        conn = Plain(client)
        current: Caller | None = None
        try:
            while True:
                current = await self._lease_for(current, caller, req.host, conn)
                if not await self._relaying.forward(req, current, conn):
                    break
                next_req = await self._next_request(client)
                if next_req is None:
                    break
                req, caller = next_req, self._caller(next_req)
                if req.is_connect:
                    return req, caller
            client.close_after_write(within=self._s.tunnel_idle)
        finally:
            self._relaying.detach(conn)
            if current is not None:
                await self._admission.end(current)
        return None

    async def _lease_for(
        self, current: Caller | None, caller: Caller, host: str, conn: Plain
    ) -> Caller:
        """The lease a request rides on: that of the request before when it is for the same
        host with the same token and username (a session's lease for any host), else a
        new one, the one before ended (as when a connection closes; the connection is
        off its relays first, so that lease's end event does not close it)."""
        hold = current.hold if current is not None else None
        same = current is not None and (current.owner, current.selector) == (
            caller.owner, caller.selector,
        )  # fmt: skip
        if current is not None and hold is not None and same:
            if hold.session:  # the session's lease, whatever the host
                current.hold = replace(hold, target=host)
                return current
            if hold.target.lower() == host.lower():
                return current
        if current is not None:
            self._relaying.detach(conn)
            await self._admission.end(current)
        await self._admission.lease(caller, host)
        return caller

    async def _next_request(self, client: Side) -> wire.RequestHead | None:
        """The next request on a kept connection; None once the client closed it, sent
        nothing for --keepalive-idle, or the gateway stops."""
        if self._relaying.stopping:
            return None
        self._idle.add(client)
        try:
            async with asyncio.timeout(self._s.keepalive_idle):
                await client.wait_data()
        except TimeoutError:
            return None
        finally:
            self._idle.discard(client)
        if not client.kept:  # closed by the client (or, stopping, by the gateway)
            return None
        return await self._request(client)

    async def _request(self, client: Side) -> wire.RequestHead:
        head = await self._read_head(client)
        try:
            req = wire.parse_head(head)
            if not req.is_connect:
                framing.request_body(req)  # a body that cannot be delimited: 400 now
        except wire.BadRequest as exc:
            raise Refused(
                exc.status, str(exc), "bad_request", wire.proxy_status("http_request_error")
            ) from None
        return req

    async def _read_head(self, client: Side) -> bytes:
        try:
            async with asyncio.timeout(self._s.header_timeout):
                return await client.read_head()
        except TimeoutError:
            raise Refused(408, "no complete request head in time", "timeout") from None
        except HeadTooLarge:
            raise Refused(
                431, f"the request head is over {self._s.max_header_bytes} bytes", "bad_request"
            ) from None

    def _caller(self, req: wire.RequestHead) -> Caller:
        creds = wire.basic_credentials(req.header(b"proxy-authorization"))
        if creds is None:
            message = "send Proxy-Authorization: Basic (password: a client token)"
            raise Refused(407, message, "unauthorized", AUTHENTICATE)
        return self._admission.caller(*creds)
