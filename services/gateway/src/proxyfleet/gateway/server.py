"""The proxy endpoint: one asyncio server, a lease per connection (or per session), the
bytes relayed through the leased upstream proxy.

Every answer the gateway writes itself is built by `wire`; a client error is a 4xx and
ends that connection only. The CONNECT reply and plain responses carry the lease and proxy
ids and the lease's epoch (`X-Proxyfleet-Lease-Id`, `-Lease-Epoch`, `X-Proxyfleet-Proxy-Id`)
so a client can report outcomes through the API."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

from proxyfleet.common.errors import Conflict, StoreUnavailable, Unavailable
from proxyfleet.common.logging import get_logger
from proxyfleet.common.models import LeaseOutcome
from proxyfleet.common.providers_config import ProvidersConfig
from proxyfleet.gateway import wire
from proxyfleet.gateway.auth import TokenBook
from proxyfleet.gateway.forward import ids, upstream_head, with_ids
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import BYTES_DOWN, BYTES_UP, TUNNELS
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.splice import HeadTooLarge, Side, relayed
from proxyfleet.gateway.tunnels import Hold, Relay, Tunnels
from proxyfleet.gateway.upstream import UpstreamFailed, open_tunnel, open_upstream, status_of
from proxyfleet.gateway.username import Selector, UsernameError, parse_username

log = get_logger(__name__)

AUTHENTICATE = ("Proxy-Authenticate", 'Basic realm="proxyfleet"')


class Refused(Exception):
    """An answer of the gateway's own, then the connection closes."""

    def __init__(self, status: int, message: str, outcome: str, *headers: tuple[str, str]):
        super().__init__(message)
        self.status = status
        self.outcome = outcome
        self.headers = list(headers)


@dataclass(slots=True)
class Caller:
    owner: str
    selector: Selector
    hold: Hold | None = None
    """The lease the connection rides on now (a retry moves it); finished at the end."""


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
        self._blocked = settings.blocked()
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
                exc.status, str(exc), "bad_request", _status("http_request_error")
            ) from None
        if len(self._handlers) > self._max_connections:  # this one counted
            message = f"the gateway is at its limit of {self._max_connections} connections"
            raise _unavailable(message, 1, "proxy_internal_response", outcome="busy")
        caller = self._caller(req)
        caller.hold = await self._acquire(caller, req.host)
        self._tunnels.expect(caller.hold)
        try:
            if req.is_connect:
                await self._tunnel(req, caller, client)
            else:
                await self._forward(req, caller, client)
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
            raise _bad_username(str(exc), exc.param) from None
        self._check_selector(selector)
        return Caller(owner, selector)

    def _check_selector(self, sel: Selector) -> None:
        if sel.provider and sel.provider not in self._zones:
            raise _bad_username(f"provider: unknown provider {sel.provider!r}", "provider")
        zones = self._zones[sel.provider] if sel.provider else set().union(*self._zones.values())
        if sel.zone and sel.zone not in zones:
            raise _bad_username(f"zone: unknown zone {sel.zone!r}", "zone")

    async def _acquire(self, caller: Caller, target: str) -> Hold:
        try:
            return await self._leaser.acquire(caller.owner, caller.selector, target)
        except (Unavailable, Conflict) as exc:
            raise _unavailable(str(exc), exc.retry_after, "proxy_internal_response") from None
        except StoreUnavailable:
            raise _unavailable(
                "the lease store is unreachable", 1, "proxy_internal_error"
            ) from None

    async def _upstream(self, caller: Caller, authority: str | None) -> tuple[Hold, Side]:
        """Streams to the caller's proxy (a tunnel to `authority`, or a plain connection);
        on failure, report it and retry once on another proxy."""
        assert caller.hold is not None
        hold = caller.hold
        for attempt in (1, 2):
            try:
                if authority is not None:
                    upstream = await open_tunnel(
                        hold.proxy, authority, self._s.connect_timeout, self._s.max_header_bytes
                    )
                else:
                    upstream = await open_upstream(
                        hold.proxy, self._s.connect_timeout, self._s.max_header_bytes
                    )
                return hold, upstream
            except UpstreamFailed as exc:
                log.info(
                    "gateway.upstream_failed",
                    lease_id=hold.lease_id,
                    proxy_id=hold.proxy.id,
                    attempt=attempt,
                    error=str(exc),
                )
                if attempt == 2:
                    await self._leaser.report(hold, LeaseOutcome.FAILED, str(exc))
                    raise _upstream_failed("the upstream proxy failed twice", str(exc)) from None
                self._tunnels.forget(hold.lease_id)
                try:
                    hold = await self._leaser.replace(hold, caller.selector, str(exc))
                except (Unavailable, Conflict):
                    caller.hold = None  # replace() ended the old lease
                    raise _upstream_failed(
                        "the upstream proxy failed; no other proxy available", str(exc)
                    ) from None
                caller.hold = hold
                self._tunnels.expect(hold)
        raise AssertionError("unreachable")

    async def _tunnel(self, req: wire.RequestHead, caller: Caller, client: Side) -> None:
        hold, upstream = await self._upstream(caller, req.authority)
        client.write(wire.response(200, ids(hold)))
        await self._relay(Relay(hold, client, upstream), until_upstream_eof=False)

    async def _forward(self, req: wire.RequestHead, caller: Caller, client: Side) -> None:
        hold, upstream = await self._upstream(caller, None)
        upstream.write(upstream_head(req, hold))
        client.pipe_to(upstream)  # the body (if any) goes up while the answer is awaited
        try:
            async with asyncio.timeout(self._s.connect_timeout + self._s.header_timeout):
                rhead = await upstream.read_head()
        except (TimeoutError, asyncio.IncompleteReadError, HeadTooLarge, OSError):
            upstream.abort()  # the client still gets the answer below
            await self._leaser.report(hold, LeaseOutcome.FAILED, "no response head")
            raise Refused(
                502, "the upstream sent no response", "upstream_failed",
                _status("http_response_incomplete"),
            ) from None  # fmt: skip
        status = status_of(rhead)
        if status == 407:
            upstream.abort()  # the client still gets the answer below
            await self._leaser.report(hold, LeaseOutcome.FAILED, "upstream answered 407")
            raise _upstream_failed("the upstream proxy refused its credentials", "407")
        if status in self._blocked:
            await self._leaser.report(hold, LeaseOutcome.BLOCKED, f"status {status}", req.host)
        client.write(with_ids(rhead, hold))
        BYTES_DOWN.inc(len(rhead))
        # One request per connection: the end of the answer ends it.
        await self._relay(Relay(hold, client, upstream), until_upstream_eof=True)

    async def _relay(self, relay: Relay, *, until_upstream_eof: bool) -> None:
        self._tunnels.add(relay)
        TUNNELS.labels("ok").inc()
        try:
            await relayed(relay.client, relay.upstream, until_upstream_eof=until_upstream_eof)
        finally:
            if relay.ended or relay.client.lost or relay.upstream.lost:
                relay.close(relay.ended)
            else:  # both ends (or the answer) finished: what is still buffered goes out
                relay.client.close_after_write(within=self._s.tunnel_idle)
                relay.upstream.close_after_write(within=self._s.tunnel_idle)
            self._tunnels.remove(relay)
            if relay.ended:
                TUNNELS.labels("ended").inc()


def _status(error: str, details: str = "") -> tuple[str, str]:
    return wire.proxy_status(error, details)


def _bad_username(message: str, param: str) -> Refused:
    status = _status("http_request_error", f"username {param}")
    return Refused(400, f"proxy username: {message}", "bad_request", status)


def _unavailable(
    message: str, retry_after: float | None, error: str, outcome: str = "unavailable"
) -> Refused:
    retry = str(max(1, math.ceil(retry_after or 1)))
    return Refused(503, message, outcome, ("Retry-After", retry), _status(error, message))


def _upstream_failed(message: str, why: str) -> Refused:
    return Refused(502, message, "upstream_failed", _status("destination_unavailable", why))
