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
    "(no proxy), busy (at --max-connections), limited (a client limit), upstream_failed (after "
    "the retry), timeout, ended (its lease ended).",
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
CLIENT_LIMITED = Counter(
    "proxyfleet_gateway_client_limited_total",
    "Connections refused (429, or SOCKS5 reply 2) for a client token over one of its limits: "
    "connections, leases, rate or bytes_per_day (also outcome `limited` in "
    "proxyfleet_gateway_tunnels_total).",
    ["client", "limit"],
)
CLIENT_BYTES = Counter(
    "proxyfleet_gateway_client_bytes_total",
    "Bytes relayed for a client token, by direction (up: to the upstream; down: back).",
    ["client", "direction"],
)
PROXY_BYTES = Counter(
    "proxyfleet_gateway_proxy_bytes_total",
    "Bytes relayed through the fleet's proxies by provider, zone and direction (not by proxy "
    "id: there are many and they come and go; a lease's `lease.released` event has its "
    "proxy's bytes).",
    ["provider", "zone", "direction"],
)
BYTES_UP = BYTES.labels("up")
BYTES_DOWN = BYTES.labels("down")
# The children every tunnel touches, looked up once (labels() takes a lock and a lookup).
TUNNELS_OK = TUNNELS.labels("ok")
GRANTS_BY_RESULT = {r: GRANT_SECONDS.labels(r) for r in ("ok", "unavailable", "error")}
CONNECTS_BY_RESULT = {r: UPSTREAM_CONNECT_SECONDS.labels(r) for r in ("ok", "failed")}
