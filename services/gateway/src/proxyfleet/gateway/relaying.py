"""A connection from its lease on: reaching the leased upstream (retried once on another
proxy when it fails, the failure reported), then a CONNECT tunnel or one plain-HTTP
request relayed through it. The CONNECT reply and plain responses carry the lease and
proxy ids and the lease's epoch (`X-Proxyfleet-Lease-Id`, `-Lease-Epoch`,
`X-Proxyfleet-Proxy-Id`) so a client can report outcomes through the API."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from proxyfleet.common.errors import Conflict, Unavailable
from proxyfleet.common.logging import get_logger
from proxyfleet.common.models import LeaseOutcome
from proxyfleet.gateway import wire
from proxyfleet.gateway.forward import ids, upstream_head, with_ids
from proxyfleet.gateway.leasing import Leaser
from proxyfleet.gateway.metrics import BYTES_DOWN, TUNNELS
from proxyfleet.gateway.refusals import Refused, upstream_failed
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.splice import HeadTooLarge, Side, relayed
from proxyfleet.gateway.tunnels import Hold, Relay, Tunnels
from proxyfleet.gateway.upstream import UpstreamFailed, open_tunnel, open_upstream, status_of
from proxyfleet.gateway.username import Selector

log = get_logger(__name__)


@dataclass(slots=True)
class Caller:
    """Who a connection is for: the token's name and what its username asks for."""

    owner: str
    selector: Selector
    hold: Hold | None = None
    """The lease the connection rides on now (a retry moves it); finished at the end."""


class Relaying:
    """What a connection does once it has its lease."""

    def __init__(self, settings: GatewaySettings, leaser: Leaser, tunnels: Tunnels) -> None:
        self._s = settings
        self._leaser = leaser
        self._tunnels = tunnels
        self._blocked = settings.blocked()

    async def _upstream(self, caller: Caller, authority: str | None) -> tuple[Hold, Side]:
        """A connection to the caller's proxy (a tunnel to `authority`, or a plain one);
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
                    raise upstream_failed("the upstream proxy failed twice", str(exc)) from None
                self._tunnels.forget(hold.lease_id)
                try:
                    hold = await self._leaser.replace(hold, caller.selector, str(exc))
                except (Unavailable, Conflict):
                    caller.hold = None  # replace() ended the old lease
                    raise upstream_failed(
                        "the upstream proxy failed; no other proxy available", str(exc)
                    ) from None
                caller.hold = hold
                self._tunnels.expect(hold)
        raise AssertionError("unreachable")

    async def tunnel(self, req: wire.RequestHead, caller: Caller, client: Side) -> None:
        hold, upstream = await self._upstream(caller, req.authority)
        client.write(wire.response(200, ids(hold)))
        await self._relay(Relay(hold, client, upstream), until_upstream_eof=False)

    async def forward(self, req: wire.RequestHead, caller: Caller, client: Side) -> None:
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
                wire.proxy_status("http_response_incomplete"),
            ) from None  # fmt: skip
        status = status_of(rhead)
        if status == 407:
            upstream.abort()  # the client still gets the answer below
            await self._leaser.report(hold, LeaseOutcome.FAILED, "upstream answered 407")
            raise upstream_failed("the upstream proxy refused its credentials", "407")
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
