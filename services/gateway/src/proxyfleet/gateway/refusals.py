"""The answers the gateway writes itself before closing a connection: a status, a
message, the outcome it is counted under and headers (RFC 9209 Proxy-Status among them);
to a SOCKS5 client, the reply code that stands for them (`socks_server`)."""

from __future__ import annotations

import math

from proxyfleet.common.domain.socks5 import Reply
from proxyfleet.gateway import wire

AUTHENTICATE = ("Proxy-Authenticate", 'Basic realm="proxyfleet"')


class Refused(Exception):
    """An answer of the gateway's own, then the connection closes."""

    def __init__(
        self,
        status: int,
        message: str,
        outcome: str,
        *headers: tuple[str, str],
        reply: Reply | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.outcome = outcome
        self.headers = list(headers)
        self.reply = reply
        self.limit = ""
        """The client limit it is over (429), else ""."""
        """The SOCKS5 reply code when it says more than the outcome (what the upstream
        answered); None: the one of the outcome."""


def bad_username(message: str, param: str) -> Refused:
    return Refused(
        400, f"proxy username: {message}", "bad_request",
        wire.proxy_status("http_request_error", f"username {param}"),
    )  # fmt: skip


def unavailable(
    message: str, retry_after: float | None, error: str, outcome: str = "unavailable"
) -> Refused:
    retry = str(max(1, math.ceil(retry_after or 1)))
    proxy_status = wire.proxy_status(error, message)
    return Refused(503, message, outcome, ("Retry-After", retry), proxy_status)


def busy(max_connections: int) -> Refused:
    message = f"the gateway is at its limit of {max_connections} connections"
    return unavailable(message, 1, "proxy_internal_response", outcome="busy")


def bad_response(why: str) -> Refused:
    """A response the gateway cannot relay (its body cannot be delimited)."""
    return Refused(
        502, f"the upstream's response: {why}", "upstream_failed",
        wire.proxy_status("http_protocol_error", why),
    )  # fmt: skip


def upstream_failed(message: str, why: str, reply: Reply | None = None) -> Refused:
    return Refused(
        502, message, "upstream_failed", wire.proxy_status("destination_unavailable", why),
        reply=reply,
    )  # fmt: skip


LIMIT_ERRORS = {
    "connections": "connection_limit_reached",
    "leases": "connection_limit_reached",
    "rate": "http_request_denied",
    "bytes_per_day": "http_request_denied",
}
"""The RFC 9209 error type of each client limit (its name is in the details)."""


def over_limit(client: str, limit: str, message: str, retry_after: float) -> Refused:
    """429: the client token is at one of its limits (`client_limits.KEYS`)."""
    retry = str(max(1, math.ceil(retry_after)))
    refused = Refused(
        429, f"client {client}: {message}", "limited", ("Retry-After", retry),
        wire.proxy_status(LIMIT_ERRORS[limit], f"client limit {limit}: {message}"),
        reply=Reply.NOT_ALLOWED,
    )  # fmt: skip
    refused.limit = limit
    return refused
