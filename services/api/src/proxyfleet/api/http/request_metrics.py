"""The middleware timing every HTTP request (proxyfleet_api_request_seconds)."""

from __future__ import annotations

import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import Histogram

from proxyfleet.common.observability.metrics import LATENCY_BUCKETS

REQUEST_SECONDS = Histogram(
    "proxyfleet_api_request_seconds",
    "HTTP request latency by route template, method and status.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)


def request_metrics_middleware(app: ASGIApp) -> ASGIApp:
    """Times each HTTP request of a matched route (label: the route template, so ids do
    not explode the label set)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        method = scope["method"]
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_wrapper)
        finally:
            route = scope.get("path_template") or "unmatched"
            observe_request(route, method, status, time.perf_counter() - start)

    return middleware


_REQUEST_CHILDREN: dict[tuple[str, str, int], Histogram] = {}


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    """Time one request of `route` (a template) into the labelled child, looked up once
    per (route, method, status): the set is small (route templates, not paths) and
    `labels()` costs a lock and a tuple."""
    key = (route, method, status)
    child = _REQUEST_CHILDREN.get(key)
    if child is None:
        child = _REQUEST_CHILDREN[key] = REQUEST_SECONDS.labels(route, method, str(status))
    child.observe(seconds)
