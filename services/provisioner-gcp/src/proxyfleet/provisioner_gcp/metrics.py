"""Prometheus metrics of the GCP provisioner (the runner's provider-call metrics come on top)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from proxyfleet.common.observability.metrics import LATENCY_BUCKETS
from proxyfleet.common.runner.blocking import CallMetrics

API = CallMetrics(
    seconds=Histogram(
        "proxyfleet_gcp_api_call_seconds",
        "Latency of Compute API calls by method and result (ok or error).",
        ["method", "result"],
        buckets=LATENCY_BUCKETS,
    ),
    calls=Counter(
        "proxyfleet_gcp_api_calls_total",
        "Compute API calls made, by method (operation waits included).",
        ["method"],
    ),
    errors=Counter(
        "proxyfleet_gcp_api_errors_total",
        "Compute API calls or operations that failed, by method and error code.",
        ["method", "code"],
    ),
)
OPERATIONS_IN_FLIGHT = Gauge(
    "proxyfleet_gcp_operations_in_flight",
    "Compute mutations (insert, delete, firewall) started and not yet DONE.",
)
ZONE_ERRORS = Counter(
    "proxyfleet_gcp_zone_errors_total",
    "Quota and capacity errors by GCE zone and kind (quota or capacity).",
    ["zone", "kind"],
)
SWEPT = Counter(
    "proxyfleet_gcp_swept_total",
    "Orphan disks, addresses and firewall rules the sweeper deleted (dry_run=true: found).",
    ["kind", "dry_run"],
)
PREEMPTED = Counter(
    "proxyfleet_gcp_preempted_total",
    "Proxies failed because their VM was preempted or disappeared.",
)
