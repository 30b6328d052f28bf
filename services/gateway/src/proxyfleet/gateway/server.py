"""The proxy endpoint: one asyncio server; each connection's head read (bounded, timed),
its token and username checked, its lease acquired, then relayed (`relaying`): a tunnel,
or plain-HTTP requests one after another (keep-alive), each on the lease of the one
before while it is for the same host; a stop drains what is open.

Every answer the gateway writes itself is built by `wire`; a client error is a 4xx and
ends that connection only."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from proxyfleet.common.core.errors import Conflict, StoreUnavailable, Unavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.gateway import framing, wire
from proxyfleet.gateway.auth import TokenBook
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import BYTES_UP, TUNNELS
from proxyfleet.gateway.refusals import AUTHENTICATE, Refused, bad_username, unavailable
from proxyfleet.gateway.relaying import Caller, Plain, Relaying
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.splice import HeadTooLarge, Side
from proxyfleet.gateway.tunnels import Hold, Tunnels
from proxyfleet.gateway.username import Selector, UsernameError, parse_username

log = get_logger(__name__)


class Gateway:
    def __init__(
        self,
        settings: GatewaySettings,
        leaser: Leaser,
        tokens: TokenBook,
        providers: ProvidersConfig,
        tunnels: Tunnels,
        max_connections: int,
    ) -> None:
        self._s = settings
        self._max_connections = max_connections
        self._leaser = leaser
        self._tokens = tokens
        self._tunnels = tunnels
        self._relaying = Relaying(settings, leaser, tunnels)
        self._zones = {p.name: set(p.zones) for p in providers.providers}
        self.port = 0
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
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: Side(BYTES_UP, self._accepted, self._s.max_header_bytes),
            self._s.host,
            self._s.port,
            backlog=4096,
            reuse_port=self._s.reuse_port or None,
        )
        self.port = server.sockets[0].getsockname()[1]
        log.info("gateway.listening", host=self._s.host, port=self.port)
        self.listening.set()
        try:
            await stop.wait()
        finally:
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

    async def _drain(self) -> None:
        """Let open connections finish, within drain_seconds (no new ones come)."""
        if not self._handlers or self._s.drain_seconds <= 0:
            return
        log.info("gateway.draining", connections=len(self._handlers),
                 within_s=self._s.drain_seconds)  # fmt: skip
        await asyncio.wait(self._handlers.values(), timeout=self._s.drain_seconds)
        if self._handlers:
            log.info("gateway.drain_ended", closing=len(self._handlers))

    def _accepted(self, client: Side) -> None:
        task = asyncio.get_running_loop().create_task(self._serve(client))
        self._handlers[client] = task
        task.add_done_callback(lambda _: self._handlers.pop(client, None))

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
        if len(self._handlers) > self._max_connections:  # this one counted
            message = f"the gateway is at its limit of {self._max_connections} connections"
            raise unavailable(message, 1, "proxy_internal_response", outcome="busy")
        caller = self._caller(req)
        if not req.is_connect:
            connect = await self._plain(req, caller, client)
            if connect is None:
                return
            req, caller = connect  # after plain requests, the connection becomes a tunnel
        caller.hold = await self._acquire(caller, req.host)
        self._tunnels.expect(caller.hold)
        try:
            await self._relaying.tunnel(req, caller, client)
        finally:
            await self._end(caller)

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
                await self._end(current)
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
            await self._end(current)
        caller.hold = await self._acquire(caller, host)
        self._tunnels.expect(caller.hold)
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

    async def _end(self, caller: Caller) -> None:
        """The connection no longer rides on the caller's lease: release it (a session's
        lives on)."""
        if caller.hold is not None:
            self._tunnels.forget(caller.hold.lease_id)
            await self._finish(caller.hold)
            caller.hold = None

    async def _finish(self, hold: Hold) -> None:
        try:
            await self._leaser.finish(hold)
        except StoreUnavailable as exc:  # the lease expires at its TTL instead
            log.warning("gateway.release_failed", lease_id=hold.lease_id, error=str(exc))

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
        username, password = creds
        owner = self._tokens.owner_of(password)
        if owner is None:
            raise Refused(407, "unknown token", "unauthorized", AUTHENTICATE)
        try:
            selector = parse_username(username)
        except UsernameError as exc:
            raise bad_username(str(exc), exc.param) from None
        self._check_selector(selector)
        return Caller(owner, selector)

    def _check_selector(self, sel: Selector) -> None:
        if sel.provider and sel.provider not in self._zones:
            raise bad_username(f"provider: unknown provider {sel.provider!r}", "provider")
        zones = self._zones[sel.provider] if sel.provider else set().union(*self._zones.values())
        if sel.zone and sel.zone not in zones:
            raise bad_username(f"zone: unknown zone {sel.zone!r}", "zone")

    async def _acquire(self, caller: Caller, target: str) -> Hold:
        try:
            return await self._leaser.acquire(caller.owner, caller.selector, target)
        except (Unavailable, Conflict) as exc:
            pool = caller.selector.pool
            if pool and await self._leaser.pool_missing(pool):
                raise bad_username(f"pool: unknown pool {pool!r}", "pool") from None
            raise unavailable(str(exc), exc.retry_after, "proxy_internal_response") from None
        except StoreUnavailable:
            raise unavailable("the lease store is unreachable", 1, "proxy_internal_error") from None
