"""Prometheus metrics of the KVM provisioner (the runner's provider-call metrics come on top)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from proxyfleet.common.observability.metrics import LATENCY_BUCKETS
from proxyfleet.common.runner.blocking import CallMetrics

LIBVIRT = CallMetrics(
    seconds=Histogram(
        "proxyfleet_kvm_libvirt_call_seconds",
        "Latency of libvirt calls by host, call and result (ok or error).",
        ["host", "call", "result"],
        buckets=LATENCY_BUCKETS,
    ),
    errors=Counter(
        "proxyfleet_kvm_libvirt_errors_total",
        "libvirt calls that failed, by host, call and libvirt error code name.",
        ["host", "call", "code"],
    ),
)
IMAGE_CACHE = Counter(
    "proxyfleet_kvm_image_cache_total",
    "Base image lookups in a host's pool: hit (volume there) or miss (downloaded/uploaded).",
    ["host", "result"],
)
UPLOAD_BYTES = Counter(
    "proxyfleet_kvm_upload_bytes_total",
    "Bytes uploaded into storage pools (base images and seed ISOs), by host.",
    ["host"],
)
DOWNLOAD_BYTES = Counter(
    "proxyfleet_kvm_image_download_bytes_total",
    "Bytes of base images downloaded by the provisioner.",
)
SSH_CONNECTS = Counter(
    "proxyfleet_kvm_ssh_connects_total",
    "Connections to a host's libvirt (SSH with the socket forwarded, then libvirt's open), "
    "by host and result.",
    ["host", "result"],
)
PLACEMENTS = Counter(
    "proxyfleet_kvm_placements_total",
    "Creates by the host they went to and how: built (a new domain) or adopted (the domain "
    "an earlier attempt made).",
    ["host", "how"],
)
HOSTS_DOWN = Counter(
    "proxyfleet_kvm_host_down_total",
    "Times a host could not be listed for a create and was left out of placement for "
    "host_retry_after seconds, by host.",
    ["host"],
)
NETWORK_SHARED_EGRESS = Gauge(
    "proxyfleet_kvm_network_shared_egress",
    "1 when a host's libvirt network NATs its VMs behind the host's address (its proxies "
    "share one exit address), 0 when each VM has its own (bridged, routed); by host and "
    "network, read on the host's first create.",
    ["host", "network"],
)
