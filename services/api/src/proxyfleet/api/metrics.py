"""The API's Prometheus metrics and the middleware timing every request."""

from __future__ import annotations

import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import Counter, Gauge, Histogram

from proxyfleet.common.metrics import LATENCY_BUCKETS

LEASES_GRANTED = Counter("proxyfleet_leases_granted_total", "Leases granted.")
LEASES_RELEASED = Counter("proxyfleet_leases_released_total", "Leases released by their holder.")
LEASES_EXPIRED = Counter(
    "proxyfleet_leases_expired_total", "Leases ended by the sweeper after their expiry."
)
LEASES_REVOKED = Counter(
    "proxyfleet_leases_revoked_total", "Leases ended by the forced delete of their proxy."
)
LEASE_CONFLICTS = Counter(
    "proxyfleet_lease_conflicts_total",
    "Grants refused with 409: the named proxy is leased, cooling down, banned or not ready.",
)
LEASE_UNAVAILABLE = Counter(
    "proxyfleet_lease_unavailable_total",
    "Grants refused with 503: no proxy matched the selector.",
)
PUBLISH_FAILURES = Counter(
    "proxyfleet_api_publish_failures_total",
    "Events or intents the API could not publish (the registry write stood).",
    ["kind"],
)
REGISTRY_PROXIES = Gauge(
    "proxyfleet_registry_proxies",
    "Proxies in the registry by provider and phase (fleet-wide; refreshed on each scrape).",
    ["provider", "phase"],
)
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
            _observe(route, method, status, time.perf_counter() - start)

    return middleware


_REQUEST_CHILDREN: dict[tuple[str, str, int], Histogram] = {}


def _observe(route: str, method: str, status: int, seconds: float) -> None:
    """Observe into the labelled child, looked up once per (route, method, status): the
    set is small (route templates, not paths) and `labels()` costs a lock and a tuple."""
    key = (route, method, status)
    child = _REQUEST_CHILDREN.get(key)
    if child is None:
        child = _REQUEST_CHILDREN[key] = REQUEST_SECONDS.labels(route, method, str(status))
    child.observe(seconds)
