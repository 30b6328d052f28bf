"""A connection from its lease on: reaching the leased upstream (retried once on another
proxy when it fails, the failure reported), then a CONNECT tunnel, or plain-HTTP requests
one after another (`forward`, each an `exchange`) while both sides keep the connection.
The CONNECT reply and plain responses carry the lease and proxy ids and the lease's
epoch (`X-Proxyfleet-Lease-Id`, `-Lease-Epoch`, `X-Proxyfleet-Proxy-Id`) so a client can
report outcomes through the API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from proxyfleet.common.core.errors import Conflict, Unavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import LeaseOutcome
from proxyfleet.gateway import framing, wire
from proxyfleet.gateway.exchange import Cut, Exchange, NoResponse
from proxyfleet.gateway.forward import ids, upstream_head, with_ids
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import BYTES_DOWN, TUNNELS, TUNNELS_OK
from proxyfleet.gateway.refusals import Refused, bad_response, upstream_failed
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.splice import Side
from proxyfleet.gateway.tunnels import Hold, Relay, Tunnels
from proxyfleet.gateway.upstream import SOCKS, Dialer, Unresolved, UpstreamFailed, tls_context
from proxyfleet.gateway.username import Selector

log = get_logger(__name__)


@dataclass(slots=True)
class Caller:
    """Who a connection is for: the token's name and what its username asks for."""

    owner: str
    selector: Selector
    hold: Hold | None = None
    """The lease the connection rides on now (a retry moves it); finished at the end."""


@dataclass(eq=False, slots=True)
class Plain:
    """A client connection carrying plain-HTTP requests, and the upstream connection kept
    for the next one (to the same lease's proxy)."""

    client: Side
    upstream: Side | None = None
    relay: Relay | None = None
    counted: bool = False
    """Counted as relayed (`ok`) once, however many requests it carries."""
    bound_to: str = ""
    """The authority the upstream connection is a tunnel to (a SOCKS5 proxy's); "": it
    carries requests for any host (an HTTP proxy's)."""

    def reusable(self, hold: Hold, authority: str) -> Side | None:
        """The kept upstream connection, when it can carry a request for `authority` on
        `hold`."""
        up = self.upstream
        if up is None or self.relay is None or self.relay.hold.lease_id != hold.lease_id:
            return None
        if self.bound_to and self.bound_to != authority:
            return None
        return None if up.eof or up.lost or up.kept else up

    def drop_upstream(self, *, abort: bool = False) -> None:
        if self.upstream is not None:
            if abort:
                self.upstream.abort()
            else:
                self.upstream.close_after_write(within=1.0)
            self.upstream = None


class Relaying:
    """What a connection does once it has its lease."""

    def __init__(self, settings: GatewaySettings, leaser: Leaser, tunnels: Tunnels) -> None:
        self._s = settings
        self._leaser = leaser
        self._tunnels = tunnels
        self._blocked = settings.blocked()
        self._dialer = Dialer(
            settings.connect_timeout,
            settings.max_header_bytes,
            tls_context(settings.upstream_ca_bundle),
        )
        self.stopping = False
        """The gateway stops: plain responses say `Connection: close`."""

    async def _upstream(
        self, caller: Caller, req: wire.RequestHead, *, resolve_here: bool = True
    ) -> tuple[Hold, Side]:
        """A connection to the caller's proxy for `req` (a tunnel to its authority, or
        one for plain requests); on failure, report it and retry once on another proxy."""
        assert caller.hold is not None
        hold = caller.hold
        for attempt in (1, 2):
            try:
                if req.is_connect:
                    upstream = await self._dialer.tunnel(
                        hold.proxy, req.host, req.port, resolve_here=resolve_here
                    )
                else:
                    upstream = await self._dialer.plain(hold.proxy, req.host, req.port)
                return hold, upstream
            except Unresolved as exc:  # another proxy would not fare better
                raise Refused(
                    502, str(exc), "upstream_failed", wire.proxy_status("dns_error", str(exc)),
                    reply=exc.reply,
                ) from None  # fmt: skip
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
                    message = "the upstream proxy failed twice"
                    raise upstream_failed(message, str(exc), exc.reply) from None
                self._tunnels.forget(hold.lease_id)
                try:
                    hold = await self._leaser.replace(hold, caller.selector, str(exc))
                except (Unavailable, Conflict):
                    caller.hold = None  # replace() ended the old lease
                    raise upstream_failed(
                        "the upstream proxy failed; no other proxy available", str(exc), exc.reply
                    ) from None
                caller.hold = hold
                self._tunnels.expect(hold)
        raise AssertionError("unreachable")

    async def tunnel(
        self,
        req: wire.RequestHead,
        caller: Caller,
        client: Side,
        opened: Callable[[Hold], bytes] | None = None,
        *,
        resolve_here: bool = True,
    ) -> None:
        """A CONNECT tunnel for `req`, answered `opened(hold)` once the upstream is open
        (by default the HTTP 200 with the lease's ids); `resolve_here`: as Dialer.tunnel's."""
        hold, upstream = await self._upstream(caller, req, resolve_here=resolve_here)
        client.write(opened(hold) if opened is not None else wire.response(200, ids(hold)))
        await self._relay(Relay(hold, client, upstream), until_upstream_eof=False)

    async def forward(self, req: wire.RequestHead, caller: Caller, conn: Plain) -> bool:
        """One plain-HTTP request on `conn`, on the caller's lease. True when the client
        connection may carry another request."""
        ex, hold, resp, raw = await self._ask(req, caller, conn)
        if resp.status == 407 and hold.proxy.scheme not in SOCKS:  # not the origin's
            conn.drop_upstream(abort=True)  # the client still gets the answer below
            await self._leaser.report(hold, LeaseOutcome.FAILED, "upstream answered 407")
            raise upstream_failed("the upstream proxy refused its credentials", "407")
        if resp.status in self._blocked:
            await self._leaser.report(hold, LeaseOutcome.BLOCKED, f"status {resp.status}", req.host)
        client, upstream = ex.client, ex.upstream
        try:
            body = framing.response_body(req.method, resp)
            close_delimited = isinstance(body, framing.UntilClose)
            # The client may send another request once this answer is whole, unless its
            # request body is not (an early answer) or it has finished sending.
            keep_client = req.keeps_alive and not close_delimited and not self.stopping
            keep_client = keep_client and not client.metering
            keep_client = keep_client and not (client.eof and not client.kept)
            head = with_ids(raw, hold, keep_alive=keep_client, named=wire.nominated(resp.headers))
            await ex.relay(body, head)
        except framing.BadFraming as exc:  # nothing of the response reached the client
            conn.drop_upstream(abort=True)
            await self._leaser.report(hold, LeaseOutcome.FAILED, str(exc))
            raise bad_response(str(exc)) from None
        BYTES_DOWN.inc(len(raw))
        keeps = req.keeps_alive and resp.keeps_alive and not close_delimited
        if not keeps or client.metering or upstream.kept or upstream.eof or upstream.lost:
            conn.drop_upstream()
        return keep_client

    async def _ask(
        self, req: wire.RequestHead, caller: Caller, conn: Plain
    ) -> tuple[Exchange, Hold, framing.ResponseHead, bytes]:
        """Send the request through the upstream connection kept from the request before
        (same lease), else a new one, and read the final response head. A kept
        connection that the upstream had closed meanwhile is replaced once (a request
        without a body can be sent again as it is)."""
        assert caller.hold is not None
        for attempt in (1, 2):
            hold, upstream = caller.hold, conn.reusable(caller.hold, req.authority)
            reused = upstream is not None
            if upstream is None:
                # Off the relays while it connects: a retry elsewhere ends this lease, and
                # its end event must not close the client connection.
                self.detach(conn)
                hold, upstream = await self._upstream(caller, req)
                conn.bound_to = req.authority if hold.proxy.scheme in SOCKS else ""
                self._attach(conn, hold, upstream)
            ex = Exchange(req, conn.client, upstream)
            ex.send(upstream_head(req, hold, keep_alive=req.keeps_alive))
            try:
                resp, raw = await ex.response(self._s.connect_timeout + self._s.header_timeout)
            except NoResponse as exc:
                conn.drop_upstream(abort=True)  # the client still gets the answer below
                if reused and exc.silent and ex.bodyless and attempt == 1:
                    continue
                if not (reused and exc.silent):  # not a proxy that closed an idle connection
                    await self._leaser.report(hold, LeaseOutcome.FAILED, str(exc))
                raise Refused(
                    502, "the upstream sent no response", "upstream_failed",
                    wire.proxy_status("http_response_incomplete"),
                ) from None  # fmt: skip
            return ex, hold, resp, raw
        raise AssertionError("unreachable")

    def _attach(self, conn: Plain, hold: Hold, upstream: Side) -> None:
        """`conn` rides on `hold` through `upstream` from now on (a relay of `tunnels`, so a
        lease end or the idle check closes it)."""
        conn.upstream = upstream
        conn.relay = Relay(hold, conn.client, upstream)
        self._tunnels.add(conn.relay)
        if not conn.counted:
            conn.counted = True
            TUNNELS_OK.inc()
        if conn.relay.ended:
            raise Cut(conn.relay.ended)

    def detach(self, conn: Plain) -> None:
        """`conn` is no relay any more, its upstream connection closed (before its lease
        ends, or at the end)."""
        conn.drop_upstream()
        if conn.relay is not None:
            self._tunnels.remove(conn.relay)
            if conn.relay.ended:
                TUNNELS.labels("ended").inc()
            conn.relay = None

    async def _relay(self, relay: Relay, *, until_upstream_eof: bool) -> None:
        self._tunnels.add(relay)
        TUNNELS_OK.inc()
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


async def relayed(client: Side, upstream: Side, *, until_upstream_eof: bool) -> None:
    """Pipe both ways (the directions not piped yet) and return once the relay is over:
    either connection lost, or both ends finished sending (`until_upstream_eof`: once the
    upstream did, as a one-request plain-HTTP connection ends)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def check() -> None:
        over = client.lost or upstream.lost or (upstream.eof and (until_upstream_eof or client.eof))
        if over and not done.done():
            done.set_result(None)

    client.watch = upstream.watch = check
    for side, sink in ((client, upstream), (upstream, client)):
        if not side.piped:
            side.pipe_to(sink)
    check()
    await done
