"""Prometheus helpers shared by the services; every service serves /metrics (the server
of services without a web framework is in proxyfleet.common.host.http)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from prometheus_client.registry import REGISTRY

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

MESSAGES = Counter(
    "proxyfleet_messages_handled_total",
    "NATS messages handled, by subject family and result.",
    ["kind", "result"],
)
MESSAGE_SECONDS = Histogram(
    "proxyfleet_message_handling_seconds",
    "Time to handle one NATS message.",
    ["kind"],
    buckets=LATENCY_BUCKETS,
)
PROVIDER_CALL_SECONDS = Histogram(
    "proxyfleet_provider_call_seconds",
    "Latency of provider calls by provider, operation and result.",
    ["provider", "op", "result"],
    buckets=LATENCY_BUCKETS,
)
RETRIES = Counter(
    "proxyfleet_retries_total",
    "Operations retried after a named temporary error.",
    ["op"],
)


def render_metrics() -> tuple[bytes, str]:
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


ADOPTIONS = Counter(
    "proxyfleet_adoptions_total",
    "Managed resources registered again after a store reset, by provider and result: "
    "adopted, exists (registered meanwhile), tombstoned (deleted: left to GC).",
    ["provider", "result"],
)
