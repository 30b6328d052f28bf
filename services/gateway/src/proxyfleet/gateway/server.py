"""The proxy endpoint: one asyncio server; each connection's head read (bounded, timed),
its token and username checked, its lease acquired, then relayed (`relaying`); a stop
drains what is open.

Every answer the gateway writes itself is built by `wire`; a client error is a 4xx and
ends that connection only."""

from __future__ import annotations

import asyncio

from proxyfleet.common.errors import Conflict, StoreUnavailable, Unavailable
from proxyfleet.common.logging import get_logger
from proxyfleet.common.providers_config import ProvidersConfig
from proxyfleet.gateway import wire
from proxyfleet.gateway.auth import TokenBook
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import BYTES_UP, TUNNELS
from proxyfleet.gateway.refusals import AUTHENTICATE, Refused, bad_username, unavailable
from proxyfleet.gateway.relaying import Caller, Relaying
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
        head = await self._read_head(client)
        try:
            req = wire.parse_head(head)
        except wire.BadRequest as exc:
            raise Refused(
                exc.status, str(exc), "bad_request", wire.proxy_status("http_request_error")
            ) from None
        if len(self._handlers) > self._max_connections:  # this one counted
            message = f"the gateway is at its limit of {self._max_connections} connections"
            raise unavailable(message, 1, "proxy_internal_response", outcome="busy")
        caller = self._caller(req)
        caller.hold = await self._acquire(caller, req.host)
        self._tunnels.expect(caller.hold)
        try:
            if req.is_connect:
                await self._relaying.tunnel(req, caller, client)
            else:
                await self._relaying.forward(req, caller, client)
        finally:
            if caller.hold is not None:
                self._tunnels.forget(caller.hold.lease_id)
                await self._finish(caller.hold)

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
            raise unavailable(str(exc), exc.retry_after, "proxy_internal_response") from None
        except StoreUnavailable:
            raise unavailable("the lease store is unreachable", 1, "proxy_internal_error") from None
