"""The gateway's Prometheus metrics (served on /metrics with every other proxyfleet metric)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from proxyfleet.common.observability.metrics import LATENCY_BUCKETS

OPEN_TUNNELS = Gauge(
    "proxyfleet_gateway_open_tunnels", "Client connections being relayed to an upstream now."
)
TUNNELS = Counter(
    "proxyfleet_gateway_tunnels_total",
    "Client connections by outcome: ok (relayed), bad_request, unauthorized, unavailable "
    "(no proxy), busy (at --max-connections), upstream_failed (after the retry), timeout, "
    "ended (its lease ended).",
    ["outcome"],
)
BYTES = Counter(
    "proxyfleet_gateway_bytes_total",
    "Bytes relayed, by direction: up (client to upstream) or down (upstream to client).",
    ["direction"],
)
UPSTREAM_CONNECT_SECONDS = Histogram(
    "proxyfleet_gateway_upstream_connect_seconds",
    "Time to reach the leased upstream proxy and open a tunnel through it (its answer to "
    "CONNECT, or the SOCKS5 dialogue), by result.",
    ["result"],
    buckets=LATENCY_BUCKETS,
)
SOCKS5 = Counter(
    "proxyfleet_gateway_socks5_total",
    "SOCKS5 client connections (also counted in proxyfleet_gateway_tunnels_total) by outcome "
    "and by what they were answered: succeeded, auth_failed, no_method, a reply code's name "
    "(docs/gateway.md), or none (closed without an answer: not SOCKS5, or gone).",
    ["outcome", "reply"],
)
SESSIONS_ACTIVE = Gauge(
    "proxyfleet_gateway_sessions_active", "Sticky sessions with a connection open on this replica."
)
GRANT_SECONDS = Histogram(
    "proxyfleet_gateway_grant_seconds",
    "Time a connection waited for its lease (grant, or a session's renew), by result.",
    ["result"],
    buckets=LATENCY_BUCKETS,
)
REPORTS = Counter(
    "proxyfleet_gateway_reports_total", "Outcomes the gateway reported on leases.", ["outcome"]
)
BYTES_UP = BYTES.labels("up")
BYTES_DOWN = BYTES.labels("down")
