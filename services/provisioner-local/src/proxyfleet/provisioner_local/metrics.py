"""The local provisioner's own Prometheus metrics (the runner's are in common)."""

from __future__ import annotations

from prometheus_client import Counter

RESTARTS = Counter(
    "proxyfleet_local_restarts_total",
    "Restarts of local proxy processes that died, by result: restarted, failed (the attempt"
    " did not listen), exhausted (the bound was reached: left to health).",
    ["result"],
)
