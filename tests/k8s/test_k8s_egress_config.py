"""The `kubernetes` section's egress keys (egress_mode, host_port_range, egress_gateway):
parsed strictly, every error naming the key and what was expected."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_k8s.pure.config import K8sProviderConfig, K8sSettings
from proxyfleet.provisioner_k8s.pure.egress_config import DEFAULT_HOST_PORT_RANGE

BASE = """
providers:
  - name: cluster
    type: kubernetes
    zones: [default]
    kubernetes:
      namespace: proxies
"""
HOST_NETWORK = (
    BASE
    + """      egress_mode: host_network
      host_port_range: [20000, 20099]
"""
)
GATEWAY = (
    BASE
    + """      egress_mode: egress_gateway
      egress_gateway:
        labels: {egress.example.com/gateway: proxies}
        annotations: {egress.projectcalico.org/selector: "egress-code == 'red'"}
"""
)


def _k8s(text: str) -> K8sSettings:
    k8s = (
        parse_providers_config(text, "providers.yaml").get("cluster", K8sProviderConfig).kubernetes
    )
    assert k8s is not None
    return k8s


def test_the_default_is_pod_mode_with_no_gateway() -> None:
    k8s = _k8s(BASE)
    assert k8s.egress_mode == "pod"
    assert k8s.host_port_range == DEFAULT_HOST_PORT_RANGE == (13128, 13383)
    assert (k8s.egress_gateway.labels, k8s.egress_gateway.annotations) == ({}, {})


def test_host_network_takes_a_port_range() -> None:
    k8s = _k8s(HOST_NETWORK)
    assert (k8s.egress_mode, k8s.host_port_range) == ("host_network", (20000, 20099))


def test_egress_gateway_takes_labels_and_annotations() -> None:
    k8s = _k8s(GATEWAY)
    assert k8s.egress_mode == "egress_gateway"
    assert k8s.egress_gateway.labels == {"egress.example.com/gateway": "proxies"}
    assert k8s.egress_gateway.annotations == {
        "egress.projectcalico.org/selector": "egress-code == 'red'"
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "      egress_mode: nat\n", r"kubernetes\.egress_mode"),
        (HOST_NETWORK.replace("[20000, 20099]", "[20099, 20000]"),
         r"kubernetes\.host_port_range: expected \[first, last\] with first <= last"),
        (HOST_NETWORK.replace("[20000, 20099]", "[80, 90]"),
         r"kubernetes\.host_port_range: expected ports from 1024"),
        (HOST_NETWORK.replace("[20000, 20099]", "[20000, 70000]"),
         r"kubernetes\.host_port_range"),
        (HOST_NETWORK.replace("[20000, 20099]", "[20000]"), r"kubernetes\.host_port_range"),
        (HOST_NETWORK + "      expose: node_port\n",
         r"kubernetes\.expose: expected pod_ip with egress_mode host_network"),
        (BASE + "      egress_mode: egress_gateway\n",
         r"kubernetes\.egress_gateway: expected labels or annotations"),
        (GATEWAY.replace("egress_mode: egress_gateway", "egress_mode: pod"),
         r"kubernetes\.egress_gateway: only with egress_mode egress_gateway"),
        (GATEWAY.replace("egress.example.com/gateway: proxies", "proxyfleet.io/x: y"),
         r"kubernetes\.egress_gateway\.labels\.proxyfleet\.io/x: reserved"),
        (GATEWAY.replace("gateway: proxies}", "gateway: 'two words'}"),
         r"kubernetes\.egress_gateway\.labels\.egress\.example\.com/gateway: expected a label"
         r" value"),
        (GATEWAY.replace("egress.projectcalico.org/selector:", "'bad key!':"),
         r"kubernetes\.egress_gateway\.annotations\.bad key!: expected a label key"),
        (GATEWAY.replace("egress.projectcalico.org/selector:", "proxyfleet.io/zone:"),
         r"kubernetes\.egress_gateway\.annotations\.proxyfleet\.io/zone: reserved"),
        (GATEWAY.replace("        annotations:", "        colour: red\n        annotations:"),
         r"colour"),
    ],
)  # fmt: skip
def test_a_bad_egress_value_names_its_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_providers_config(text, "providers.yaml")
