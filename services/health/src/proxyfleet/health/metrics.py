"""The health service's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from proxyfleet.common.observability.metrics import LATENCY_BUCKETS
from proxyfleet.common.wire.models import Phase
from proxyfleet.health.probe import FailureKind
from proxyfleet.health.prober import ERROR, INVALID, MISSING, OK

PROBE_SECONDS = Histogram(
    "proxyfleet_probe_seconds",
    "Duration of one probe (CONNECT through the proxy and a request to the target), by result.",
    ["result"],
    buckets=LATENCY_BUCKETS,
)
PROBES = Counter(
    "proxyfleet_probes_total",
    "Probes made, by result: ok, or why they failed (auth: credentials refused, by a 407 "
    "or SOCKS5; timeout, unreachable, ...).",
    ["result"],
)
TRANSITIONS = Counter(
    "proxyfleet_health_transitions_total",
    "Phase changes the health service made, by new phase.",
    ["phase"],
)
UNHEALTHY_TIMEOUTS_HELD = Counter(
    "proxyfleet_health_unhealthy_timeouts_held_total",
    "Failed probes of unhealthy proxies past --unhealthy-timeout that did not fail them: "
    "more than --unhealthy-max-share of their provider's ready and unhealthy proxies were "
    "unhealthy.",
    ["provider"],
)
PROXIES = Gauge(
    "proxyfleet_proxies",
    "Proxies in the registry, by provider and phase.",
    ["provider", "phase"],
)
PROBE_BACKLOG = Gauge(
    "proxyfleet_probe_backlog",
    "Proxies whose probe is due now and not yet claimed by any health replica.",
)
CLAIMED = Counter(
    "proxyfleet_health_claimed_total",
    "Proxies this replica claimed for a probe. Its share of the fleet's probes: "
    "rate of this series over the sum of the rates of every replica's.",
)
REPLICAS = Gauge(
    "proxyfleet_health_replicas",
    "Health replicas sharing the probes, as this replica's last claim counted them (those "
    "that claimed within the last interval); each claims at most its share of the due.",
)
PROBES_IN_FLIGHT = Gauge(
    "proxyfleet_probes_in_flight",
    "Probes claimed by this process and not yet recorded.",
)

RESULTS: tuple[str, ...] = (OK, *(k.value for k in FailureKind), ERROR)

# Label children resolved once: the hot path does no label lookups.
PROBE_SECONDS_BY_RESULT = {r: PROBE_SECONDS.labels(result=r) for r in RESULTS}
PROBES_BY_RESULT = {r: PROBES.labels(result=r) for r in RESULTS}


def set_phase_counts(provider: str, counts: dict[Phase, int]) -> None:
    for phase, n in counts.items():
        PROXIES.labels(provider=provider, phase=phase.value).set(n)


EGRESS_UNKNOWN = Counter(
    "proxyfleet_health_egress_unknown_total",
    "Good probes whose target reported no usable exit address, by reason: missing (no "
    "JSON `ip` in the answer) or invalid (not an IP address). The address stays as it was.",
    ["reason"],
)
EGRESS_CHANGES = Counter(
    "proxyfleet_health_egress_confirmed_total",
    "Exit addresses confirmed by this replica (a first address, or a change after "
    "--egress-confirm-after probes in a row saw it).",
)
EGRESS_ADDRESSES = Gauge(
    "proxyfleet_egress_addresses",
    "Exit addresses per group (group: provider, zone or pool; name: the provider, "
    "provider/zone or pool): kind distinct (addresses), proxies (proxies with a known "
    "address) and shared (addresses with more than one proxy). distinct < proxies: some "
    "proxies share an address.",
    ["group", "name", "kind"],
)
EGRESS_UNKNOWN_REASONS = (MISSING, INVALID)
EGRESS_UNKNOWN_BY_REASON = {r: EGRESS_UNKNOWN.labels(reason=r) for r in EGRESS_UNKNOWN_REASONS}
