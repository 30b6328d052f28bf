"""What each egress mode (k8s_egress) changes in a proxy's pod. Pure: no I/O.

- pod: nothing (the pod leaves through its node's SNAT address).
- host_network: the pod runs on its node's network (`hostNetwork`, DNS policy
  ClusterFirstWithHostNet so it still resolves cluster names), one proxy pod per node (a
  required anti-affinity against every proxy pod of the namespace, over
  kubernetes.io/hostname), and Squid listens on a port of `host_port_range` declared as a
  hostPort, so the scheduler never puts two pods wanting one port on one node. The pod's
  address (status.podIP) is then its node's: the provider reads no Node object.
- egress_gateway: the configured labels and annotations go on the pod, for the gateway's
  selector.
"""

from __future__ import annotations

import hashlib
from typing import Any

from proxyfleet.provisioner_k8s.pure import names
from proxyfleet.provisioner_k8s.pure.config import K8sSettings
from proxyfleet.provisioner_k8s.pure.egress_config import HOSTNAME_TOPOLOGY

Manifest = dict[str, Any]
HOST_NETWORK_DNS_POLICY = "ClusterFirstWithHostNet"


def host_port(proxy_id: str, port_range: tuple[int, int]) -> int:
    """The port of `port_range` a proxy's pod listens on: derived from its id, so a
    retried create renders the same pod (and adopts it). Two proxies may draw one port:
    the hostPort then keeps them on different nodes, as the anti-affinity does anyway."""
    first, last = port_range
    digest = int.from_bytes(hashlib.sha256(proxy_id.encode()).digest()[:8], "big")
    return first + digest % (last - first + 1)


def listen_port(s: K8sSettings, proxy_id: str) -> int:
    """The port Squid listens on in the proxy's pod (and its clients connect to)."""
    if s.egress_mode == "host_network":
        return host_port(proxy_id, s.host_port_range)
    return s.proxy_port


def anti_affinity() -> Manifest:
    """No two proxy pods (of any installation) on one node: they would share its address."""
    term = {
        "labelSelector": {"matchExpressions": [{"key": names.LABEL_PROXY, "operator": "Exists"}]},
        "topologyKey": HOSTNAME_TOPOLOGY,
    }
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def apply(pod: Manifest, s: K8sSettings) -> Manifest:
    """`pod` (a rendered pod manifest) changed for the settings' egress mode, in place."""
    if s.egress_mode == "host_network":
        spec = pod["spec"]
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = HOST_NETWORK_DNS_POLICY
        spec["affinity"] = anti_affinity()
        for container in spec["containers"]:
            for port in container.get("ports") or []:
                port["hostPort"] = port["containerPort"]
    elif s.egress_mode == "egress_gateway":
        meta = pod["metadata"]
        meta["labels"] = {**s.egress_gateway.labels, **meta["labels"]}
        meta["annotations"] = {**s.egress_gateway.annotations, **meta["annotations"]}
    return pod
