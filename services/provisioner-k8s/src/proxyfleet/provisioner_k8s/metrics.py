"""Prometheus metrics of the Kubernetes provisioner (the runner's provider-call metrics,
proxyfleet_provider_call_seconds, come on top)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from proxyfleet.common.observability.metrics import LATENCY_BUCKETS
from proxyfleet.common.runner.blocking import CallMetrics

API = CallMetrics(
    seconds=Histogram(
        "proxyfleet_k8s_api_call_seconds",
        "Latency of Kubernetes API calls by verb, resource and result (ok or error).",
        ["verb", "resource", "result"],
        buckets=LATENCY_BUCKETS,
    ),
    calls=Counter(
        "proxyfleet_k8s_api_calls_total",
        "Kubernetes API calls made, by verb and resource (each watch request counts once).",
        ["verb", "resource"],
    ),
    errors=Counter(
        "proxyfleet_k8s_api_errors_total",
        "Kubernetes API calls that failed, by verb, resource and code (quota, forbidden,"
        " invalid, http_429, http_503, no_response, ...; not found and exists left out).",
        ["verb", "resource", "code"],
    ),
)
WATCH_RESTARTS = Counter(
    "proxyfleet_k8s_watch_restarts_total",
    "Pod watch requests started again, by reason: ended (timeout or dropped: resumed from"
    " its resourceVersion), gone (410: listed again), error, relist (periodic).",
    ["reason"],
)
WATCH_EVENTS = Counter(
    "proxyfleet_k8s_watch_events_total",
    "Pod watch events received, by type (ADDED, MODIFIED, DELETED, BOOKMARK).",
    ["type"],
)
PODS_FAILED = Counter(
    "proxyfleet_k8s_pods_failed_total",
    "Proxies failed because of their pod, by reason (ImagePullBackOff, ErrImagePull,"
    " CrashLoopBackOff, OOMKilled, Evicted, gone, ...).",
    ["reason"],
)
ADOPTED_OBJECTS = Counter(
    "proxyfleet_k8s_objects_adopted_total",
    "Objects that existed already at create (409) and were adopted, by resource.",
    ["resource"],
)
SWEPT = Counter(
    "proxyfleet_k8s_swept_total",
    "Secrets, ConfigMaps and Services without their pod that the sweeper deleted"
    " (dry_run=true: found), by resource.",
    ["resource", "dry_run"],
)
