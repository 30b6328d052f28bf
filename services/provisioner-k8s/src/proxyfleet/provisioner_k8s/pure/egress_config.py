"""How a Kubernetes provider's proxy pods leave the cluster (`egress_mode`), and its checks.

Pure: no I/O. Why it matters: health records each proxy's exit address and leases hold it
(docs/egress.md); pods that leave through one address are one address to a target.

- `pod` (the default): pods leave through their node's SNAT address, so every proxy pod on
  a node shares it; health flags them as shared and leases never hold two at once.
- `host_network`: one proxy pod per node (required pod anti-affinity), on the node's own
  network, so each proxy exits from its node's address. Squid's port comes from
  `host_port_range` (the pod shares the node's ports).
- `egress_gateway`: the operator's egress gateway gives pods their own addresses; the
  labels and annotations it selects pods by are put on the proxy pods.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from proxyfleet.common.core.errors import ConfigError

EgressMode = Literal["pod", "host_network", "egress_gateway"]
EGRESS_MODES: tuple[EgressMode, ...] = ("pod", "host_network", "egress_gateway")
DEFAULT_HOST_PORT_RANGE = (13128, 13383)
"""256 ports below the NodePort range (30000-32767) and the kernel's ephemeral ports
(32768-60999), so Squid's listener meets neither."""
UNPRIVILEGED_PORT = 1024
"""Squid runs as uid 13 with every capability dropped: it cannot bind a port below."""
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"
"""The node label the anti-affinity spreads over: one proxy pod per node."""


class K8sEgressGateway(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What an egress gateway selects the proxy pods by (docs/kubernetes-provider.md):
    a CiliumEgressGatewayPolicy's podSelector labels, Calico's
    `egress.projectcalico.org/selector` annotation, an OVN-Kubernetes EgressIP's
    podSelector labels."""

    labels: dict[str, str] = msgspec.field(default_factory=dict)
    """Labels put on every proxy pod (proxyfleet.io/ keys are reserved)."""
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    """Annotations put on every proxy pod (proxyfleet.io/ keys are reserved)."""


def check_egress(
    mode: EgressMode,
    expose: str,
    host_port_range: tuple[int, int],
    gateway: K8sEgressGateway,
    where: str,
) -> None:
    """ConfigError naming `where`.<key> when the mode and its settings do not fit together
    (label and annotation syntax is checked with the other labels, in config)."""
    first, last = host_port_range
    if first > last:
        raise ConfigError(
            f"{where}.host_port_range: expected [first, last] with first <= last,"
            f" got [{first}, {last}]"
        )
    if first < UNPRIVILEGED_PORT:
        raise ConfigError(
            f"{where}.host_port_range: expected ports from {UNPRIVILEGED_PORT} (Squid runs"
            f" unprivileged and cannot bind {first}), got [{first}, {last}]"
        )
    if mode == "host_network" and expose != "pod_ip":
        raise ConfigError(
            f"{where}.expose: expected pod_ip with egress_mode host_network (the pod's address"
            f" is its node's, reached directly), got {expose}"
        )
    has_gateway = bool(gateway.labels or gateway.annotations)
    if mode == "egress_gateway" and not has_gateway:
        raise ConfigError(
            f"{where}.egress_gateway: expected labels or annotations with egress_mode"
            " egress_gateway (what the gateway selects the proxy pods by)"
        )
    if mode != "egress_gateway" and has_gateway:
        raise ConfigError(
            f"{where}.egress_gateway: only with egress_mode egress_gateway (egress_mode is {mode})"
        )
