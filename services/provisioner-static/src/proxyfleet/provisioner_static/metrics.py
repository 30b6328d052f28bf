"""The static provisioner's own Prometheus metrics (the runner's are in common). Labels
name sources by key (`sources[0]`, or the name given), never by path or URL."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

REJECTED = Counter(
    "proxyfleet_static_entries_rejected_total",
    "Lines of a static provider's source that are no proxy, by kind: malformed, scheme,"
    " port, duplicate.",
    ["provider", "source", "kind"],
)
LOADS = Counter(
    "proxyfleet_static_source_loads_total",
    "Loads of a static provider's source, by result: ok, failed (unreachable, unreadable,"
    " HTML; the last load is kept), held (the empty guard refused it).",
    ["provider", "source", "result"],
)
ENTRIES = Gauge(
    "proxyfleet_static_source_entries",
    "Good entries in a source's last load.",
    ["provider", "source"],
)
NOT_REGISTERED = Gauge(
    "proxyfleet_static_entries_over_max",
    "Entries the sources list that max_proxies leaves unregistered.",
    ["provider"],
)
