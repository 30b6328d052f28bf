"""The API's Prometheus metrics of the domain (leases, publishing, the registry).

No web framework here: the domain services count into these. The per-request latency
middleware is in proxyfleet.api.http.request_metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

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
EVENT_STREAMS = Gauge(
    "proxyfleet_api_event_streams", "Open GET /v1/events streams (server-sent events)."
)
