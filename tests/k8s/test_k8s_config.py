"""The `kubernetes` section of the providers config: parsed strictly at start, every
error naming the key and what was expected."""

from __future__ import annotations

from decimal import Decimal

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_k8s.pure.config import DEFAULT_IMAGE, K8sProviderConfig, parse_quantity

FULL = """
providers:
  - name: cluster
    type: kubernetes
    zones: [default, eu]
    kubernetes:
      namespace: proxyfleet-proxies
      image: ubuntu/squid:6.6-24.04_beta
      image_pull_policy: Always
      proxy_port: 3129
      expose: node_port
      kubeconfig: /etc/proxyfleet/kubeconfig
      context: kind-proxyfleet
      resources:
        requests: {cpu: 50m, memory: 64Mi}
        limits: {cpu: "1", memory: 128Mi}
      node_selector: {pool: proxies}
      tolerations:
        - {key: dedicated, operator: Equal, value: proxies, effect: NoSchedule}
        - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,
           tolerationSeconds: 30}
      zone_node_labels: {eu: europe-west1-b}
      labels: {team: egress, example.com/cost-centre: c42}
      source_ranges: [10.0.0.0/8]
      connect_ports: [443, 8443]
      deny_private_destinations: false
"""

MINIMAL = """
providers:
  - name: cluster
    type: kubernetes
    zones: [default]
    kubernetes:
      namespace: proxies
"""


def test_every_key_of_the_schema_is_accepted() -> None:
    k8s = (
        parse_providers_config(FULL, "providers.yaml").get("cluster", K8sProviderConfig).kubernetes
    )
    assert k8s is not None
    assert (k8s.namespace, k8s.expose, k8s.proxy_port) == ("proxyfleet-proxies", "node_port", 3129)
    assert k8s.resources.limits == {"cpu": "1", "memory": "128Mi"}
    assert k8s.tolerations[1].toleration_seconds == 30
    assert k8s.zone_node_labels == {"eu": "europe-west1-b"}
    assert k8s.deny_private_destinations is False


def test_defaults() -> None:
    k8s = (
        parse_providers_config(MINIMAL, "providers.yaml")
        .get("cluster", K8sProviderConfig)
        .kubernetes
    )
    assert k8s is not None
    assert k8s.image == DEFAULT_IMAGE == "ubuntu/squid:6.6-24.04_beta"
    assert (k8s.image_pull_policy, k8s.proxy_port, k8s.expose) == ("IfNotPresent", 3128, "pod_ip")
    assert (k8s.kubeconfig, k8s.context) == ("", "")
    assert k8s.resources.requests == {"cpu": "50m", "memory": "64Mi"}
    assert k8s.resources.limits == {"cpu": "500m", "memory": "128Mi"}
    assert (k8s.node_selector, k8s.tolerations, k8s.labels) == ({}, [], {})
    assert (k8s.source_ranges, k8s.connect_ports) == ([], [443])
    assert k8s.deny_private_destinations is True


def test_the_section_is_required_for_the_type() -> None:
    text = MINIMAL.replace("    kubernetes:\n      namespace: proxies\n", "")
    with pytest.raises(ConfigError, match=r"providers\[0\]\.kubernetes: required for type"):
        parse_providers_config(text, "providers.yaml")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("namespace: proxyfleet-proxies", "namespace: Proxies_1",
         r"kubernetes\.namespace: expected a DNS-1123 label"),
        ("namespace: proxyfleet-proxies", "namespace: " + "n" * 64,
         r"kubernetes\.namespace: expected a DNS-1123 label"),
        ("expose: node_port", "expose: ingress", r"key providers\[0\]\.kubernetes\.expose"),
        ("image_pull_policy: Always", "image_pull_policy: Sometimes",
         r"kubernetes\.image_pull_policy"),
        ("proxy_port: 3129", "proxy_port: 70000", r"kubernetes\.proxy_port"),
        ("memory: 64Mi}", "memory: 64 megs}",
         r"kubernetes\.resources\.requests\.memory: expected a Kubernetes quantity"),
        ("cpu: 50m,", "cpu: 2,", r"kubernetes\.resources\.requests\.cpu: 2 is more than the limit"),
        ("cpu: 50m,", "gpus: 1,", r"kubernetes\.resources\.requests\.gpus: expected cpu, memory"),
        ("{pool: proxies}", "{pool: 'two words'}",
         r"kubernetes\.node_selector\.pool: expected a label value"),
        ("{pool: proxies}", "{'-pool': x}",
         r"kubernetes\.node_selector\.-pool: expected a label key"),
        ("operator: Equal, value: proxies", "operator: Exists, value: proxies",
         r"tolerations\[0\]\.value: expected none with Exists"),
        ("effect: NoSchedule}", "effect: Sometimes}", r"kubernetes\.tolerations\[0\]\.effect"),
        ("{eu: europe-west1-b}", "{us: us-east1-b}",
         r"kubernetes\.zone_node_labels: us not among the provider's zones"),
        ("{eu: europe-west1-b}", "{eu: 'not a value!'}", r"kubernetes\.zone_node_labels\.eu"),
        ("{team: egress,", "{proxyfleet.io/proxy-id: x,",
         r"kubernetes\.labels\.proxyfleet\.io/proxy-id: reserved"),
        ("{team: egress,", "{app.kubernetes.io/managed-by: me,",
         r"labels\.app\.kubernetes\.io/managed-by: reserved"),
        ("{team: egress,", "{team: 'a b',", r"kubernetes\.labels\.team: expected a label value"),
        ("[10.0.0.0/8]", "[everyone]", r"kubernetes\.source_ranges: 'everyone'"),
        ("connect_ports: [443, 8443]", "connect_ports: []",
         r"kubernetes\.connect_ports: expected at least"),
        ("deny_private_destinations: false", "deny_private_destinations: false\n      colour: red",
         r"colour"),
        ("image: ubuntu/squid:6.6-24.04_beta", "image: 'ubuntu squid'",
         r"kubernetes\.image: expected"),
    ],
)  # fmt: skip
def test_a_bad_value_names_its_key(old: str, new: str, message: str) -> None:
    assert old in FULL
    with pytest.raises(ConfigError, match=message):
        parse_providers_config(FULL.replace(old, new), "providers.yaml")


@pytest.mark.parametrize(
    ("text", "value"),
    [("50m", Decimal("0.05")), ("1", Decimal(1)), ("64Mi", Decimal(64 * 2**20)),
     ("1G", Decimal(10**9)), ("1.5", Decimal("1.5")), ("1e3", Decimal(1000)),
     ("128974848", Decimal(128974848))],
)  # fmt: skip
def test_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "64 Mi", "Mi", "-1", "1.2.3", "10MB"])
def test_not_quantities(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)
