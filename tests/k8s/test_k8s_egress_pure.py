"""The pod each egress mode renders (validated against the Kubernetes 1.37 schema): pod
mode as before, host_network on its node's network one per node, egress_gateway with the
gateway's labels and annotations."""

from __future__ import annotations

from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
from tests.k8s.k8s_provider import settings_for

from proxyfleet.provisioner_k8s.pure import egress, manifests, names
from proxyfleet.provisioner_k8s.pure.manifests import ProxyObjects

K8S_VERSION = "1.37.0"
HOST_NETWORK: dict[str, Any] = {"egress_mode": "host_network", "host_port_range": [20000, 20099]}
GATEWAY: dict[str, Any] = {
    "egress_mode": "egress_gateway",
    "egress_gateway": {
        "labels": {"egress.example.com/gateway": "proxies"},
        "annotations": {"egress.projectcalico.org/selector": "egress-code == 'red'"},
    },
}


def _objects(proxy_id: str = "p123") -> ProxyObjects:
    labels = names.labels("inst-1", "cluster", proxy_id, {"team": "egress"})
    notes = names.proxy_annotations("default", 1_700_000_000.5, 3128, {}, {})
    return ProxyObjects(proxy_id, "proxies", labels, notes, "default")


def _pod(proxy_id: str = "p123", **settings: Any) -> dict[str, Any]:
    pod = manifests.pod_manifest(_objects(proxy_id), settings_for(**settings))
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
    return pod


def test_pod_mode_is_todays_pod() -> None:
    pod = _pod()
    spec = pod["spec"]
    assert not {"hostNetwork", "affinity", "dnsPolicy"} & set(spec)
    [port] = spec["containers"][0]["ports"]
    assert port == {"name": "proxy", "containerPort": 3128, "protocol": "TCP"}
    assert pod == _pod(egress_mode="pod")


def test_host_network_runs_one_pod_per_node_on_the_node_network() -> None:
    pod = _pod(**HOST_NETWORK)
    spec = pod["spec"]
    assert spec["hostNetwork"] is True
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    [term] = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {
        "labelSelector": {
            "matchExpressions": [{"key": "proxyfleet.io/proxy-id", "operator": "Exists"}]
        },
        "topologyKey": "kubernetes.io/hostname",
    }
    # The selector takes the pod itself: no second proxy pod joins it on its node.
    assert "proxyfleet.io/proxy-id" in pod["metadata"]["labels"]
    container = spec["containers"][0]
    [port] = container["ports"]
    wanted = egress.host_port("p123", (20000, 20099))
    assert port == {"name": "proxy", "containerPort": wanted, "hostPort": wanted, "protocol": "TCP"}
    assert container["readinessProbe"]["tcpSocket"] == {"port": wanted}
    # Still unprivileged: a hostNetwork pod needs no capability to bind a port >= 1024.
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_host_ports_are_stable_per_proxy_and_spread_over_the_range() -> None:
    ports = {egress.host_port(f"p{i}", (20000, 20099)) for i in range(200)}
    assert ports <= set(range(20000, 20100))
    assert len(ports) > 50
    assert egress.host_port("p7", (20000, 20099)) == egress.host_port("p7", (20000, 20099))
    assert egress.host_port("p7", (20005, 20005)) == 20005
    assert _pod("p7", **HOST_NETWORK) == _pod("p7", **HOST_NETWORK)


def test_host_network_squid_listens_on_the_pods_port() -> None:
    s = settings_for(**HOST_NETWORK)
    port = egress.listen_port(s, "p123")
    assert port != s.proxy_port
    assert f"http_port 0.0.0.0:{port}" in manifests.squid_conf(s, port).splitlines()


def test_egress_gateway_puts_its_labels_and_annotations_on_the_pod_only() -> None:
    pod = _pod(**GATEWAY)
    meta = pod["metadata"]
    assert meta["labels"]["egress.example.com/gateway"] == "proxies"
    assert meta["labels"]["proxyfleet.io/proxy-id"] == "p123"
    assert meta["annotations"]["egress.projectcalico.org/selector"] == "egress-code == 'red'"
    assert meta["annotations"]["proxyfleet.io/zone"] == "default"
    assert not {"hostNetwork", "affinity"} & set(pod["spec"])
    # The Secret and ConfigMap are not the gateway's business.
    conf = manifests.configmap_manifest(_objects(), "uid-1", "conf")
    assert "egress.example.com/gateway" not in conf["metadata"]["labels"]
