"""The answers the gateway writes itself before closing a connection: a status, a
message, the outcome it is counted under and headers (RFC 9209 Proxy-Status among them)."""

from __future__ import annotations

import math

from proxyfleet.gateway import wire

AUTHENTICATE = ("Proxy-Authenticate", 'Basic realm="proxyfleet"')


class Refused(Exception):
    """An answer of the gateway's own, then the connection closes."""

    def __init__(self, status: int, message: str, outcome: str, *headers: tuple[str, str]):
        super().__init__(message)
        self.status = status
        self.outcome = outcome
        self.headers = list(headers)


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


def bad_response(why: str) -> Refused:
    """A response the gateway cannot relay (its body cannot be delimited)."""
    return Refused(
        502, f"the upstream's response: {why}", "upstream_failed",
        wire.proxy_status("http_protocol_error", why),
    )  # fmt: skip


def upstream_failed(message: str, why: str) -> Refused:
    return Refused(
        502, message, "upstream_failed", wire.proxy_status("destination_unavailable", why)
    )
