"""The SOCKS5 listener's connections (RFC 1928, username/password auth per RFC 1929,
CONNECT only): the handshake read within --header-timeout (the pure codec is
proxyfleet.common.domain.socks5), the username and token checked as the HTTP side's, then
the same lease and tunnel (`admission`, `relaying`). A name is passed on as a name, to any
upstream: the gateway never resolves what a SOCKS5 client asks for.

A refusal is answered with the reply code that stands for it (the table in
docs/gateway.md), then the connection closes; bad input is counted, never logged above
info, and ends that connection only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from proxyfleet.common.domain import socks5
from proxyfleet.common.domain.socks5 import Reply, Socks5Error
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.gateway import wire
from proxyfleet.gateway.admission import Admission
from proxyfleet.gateway.metrics import SOCKS5, TUNNELS
from proxyfleet.gateway.refusals import Refused
from proxyfleet.gateway.relaying import Caller, Relaying
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.gateway.splice import Side
from proxyfleet.gateway.tunnels import Hold

log = get_logger(__name__)

OUTCOME_REPLIES = {
    "unavailable": Reply.GENERAL_FAILURE,
    "busy": Reply.GENERAL_FAILURE,
    "limited": Reply.NOT_ALLOWED,
    "bad_request": Reply.NOT_ALLOWED,
    "upstream_failed": Reply.NETWORK_UNREACHABLE,
}
"""The reply to a refusal after the handshake, by its outcome (an upstream's failure may
say more: `Refused.reply`); any other is a general failure."""

SUCCEEDED = socks5.reply(Reply.SUCCEEDED)


class _Answered(Exception):
    """The handshake ended with an answer already sent: `answer` (as SOCKS5 counts it)."""

    def __init__(self, outcome: str, answer: str) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.answer = answer


def reply_to(refused: Refused) -> Reply:
    if refused.reply is not None:
        return refused.reply
    return OUTCOME_REPLIES.get(refused.outcome, Reply.GENERAL_FAILURE)


def reply_name(reply: Reply) -> str:
    return reply.name.lower()


class Socks5Endpoint:
    def __init__(
        self,
        settings: GatewaySettings,
        admission: Admission,
        relaying: Relaying,
        check_capacity: Callable[[], None],
    ) -> None:
        self._s = settings
        self._admission = admission
        self._relaying = relaying
        self._check_capacity = check_capacity
        """Raises Refused (busy) when the gateway serves as many connections as it can."""

    async def serve(self, client: Side) -> None:
        """One client connection, to its end (its lease released)."""
        outcome, answer = "", "none"
        try:
            await self._handle(client)
            return  # the relay closed it
        except Socks5Error as exc:  # bad input: answered as the protocol says, then closed
            outcome, answer = "bad_request", self._refuse(client, exc)
        except _Answered as exc:
            outcome, answer = exc.outcome, exc.answer
        except Refused as r:
            reply = reply_to(r)
            client.write(socks5.reply(reply))
            outcome, answer = r.outcome, reply_name(reply)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away, or stopped sending
        except Exception as exc:  # one connection must never take the gateway down
            outcome = "error"
            log.exception("gateway.socks5_connection_failed", error=repr(exc))
        if outcome:
            TUNNELS.labels(outcome).inc()
            SOCKS5.labels(outcome, answer).inc()
        if answer == "none":
            client.abort()
        else:
            client.close_after_write(within=1.0)

    async def _handle(self, client: Side) -> None:
        try:
            async with asyncio.timeout(self._s.header_timeout):
                caller = await self._authenticated(client)
                request = await self._request(client)
        except TimeoutError:
            TUNNELS.labels("timeout").inc()
            SOCKS5.labels("timeout", "none").inc()
            raise
        self._check_capacity()
        self._admission.admit(caller)
        req = wire.RequestHead(
            "CONNECT", f"{request.host}:{request.port}", request.host, request.port, []
        )
        try:
            await self._admission.lease(caller, request.host)
            try:
                await self._relaying.tunnel(req, caller, client, self._opened, resolve_here=False)
            finally:
                await self._admission.end(caller)
        finally:
            self._admission.leave(caller.owner)

    async def _authenticated(self, client: Side) -> Caller:
        """The greeting and the username/password, answered; the caller they name."""
        count = socks5.methods_count(await client.read_exactly(socks5.GREETING_PREFIX_LEN))
        method = socks5.choose_method(await client.read_exactly(count))
        client.write(socks5.method_choice(method))
        if method == socks5.NO_ACCEPTABLE:  # RFC 1928: the client closes; so does the gateway
            raise _Answered("unauthorized", "no_method")
        length = socks5.username_length(await client.read_exactly(socks5.AUTH_PREFIX_LEN))
        username = await client.read_exactly(length + 1)  # and the password's length
        password = await client.read_exactly(socks5.password_length(username))
        name, token = socks5.credentials(username[:-1], password)
        try:
            caller = self._admission.caller(name, token)
        except Refused as r:  # an unknown token, a username the HTTP side answers 400
            client.write(socks5.auth_status(False))
            raise _Answered(r.outcome, "auth_failed") from None
        client.write(socks5.auth_status(True))
        return caller

    async def _request(self, client: Side) -> socks5.Request:
        prefix = await client.read_exactly(socks5.REQUEST_PREFIX_LEN)
        length = socks5.request_length(prefix)
        rest = await client.read_exactly(length - socks5.REQUEST_PREFIX_LEN)
        return socks5.parse_request(prefix + rest)

    def _refuse(self, client: Side, exc: Socks5Error) -> str:
        """Answer bad input as RFC 1928/1929 say; what it was answered."""
        if exc.reply is not None:
            client.write(socks5.reply(exc.reply))
            return reply_name(exc.reply)
        if exc.auth:
            client.write(socks5.auth_status(False))
            return "auth_failed"
        return "none"

    def _opened(self, hold: Hold) -> bytes:
        SOCKS5.labels("ok", "succeeded").inc()  # and `ok` in TUNNELS by the relay
        return SUCCEEDED
