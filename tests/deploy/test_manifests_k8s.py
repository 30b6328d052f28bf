"""The Kubernetes provisioner's component (deploy/kubernetes/k8s): its Deployment, its Role
in the proxies' namespace (exactly the verbs of interfaces section 2, no wildcard), the
binding, the NetworkPolicy in front of the proxy pods, its providers entry; and the dev and
production overlays built on it."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.deploy.kube import (
    DEPLOY,
    OVERLAYS,
    ROOT,
    Doc,
    named,
    of_kind,
    pod_spec,
    render,
    selects,
    workspace_member,
)
from tests.deploy.kube import providers_text as rendered_providers_text

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_k8s.pure.config import K8sProviderConfig

K8S = DEPLOY / "kubernetes" / "k8s"
PROXIES_NS = "proxyfleet-proxies"
ROLE_RULES = [
    {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["create", "get", "list", "watch", "delete"],
    },
    {
        "apiGroups": [""],
        "resources": ["secrets", "configmaps", "services"],
        "verbs": ["create", "get", "list", "delete"],
    },
]
"""The calls the provisioner makes (interfaces section 2); its RBAC test compares them."""
PROXY_POD_LABELS = {
    "app.kubernetes.io/managed-by": "proxyfleet",
    "proxyfleet.io/installation": "prod",
    "proxyfleet.io/proxy-id": "p-0123456789abcdef",
    "proxyfleet.io/provider": "cluster",
}
"""The labels the provisioner puts on every proxy pod (interfaces section 2)."""
WITH_K8S = ("kubernetes-dev", "kubernetes-production")


def _files() -> dict[str, list[Doc]]:
    return {
        p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
        for p in sorted(K8S.glob("*.yaml"))
    }


def _entry(text: str, name: str) -> dict[str, Any]:
    """One provider's entry of a providers.yaml, as plain YAML (no parser needed)."""
    (entry,) = [p for p in yaml.safe_load(text)["providers"] if p["name"] == name]
    found: dict[str, Any] = entry
    return found


def _patch_text(path: Path) -> str:
    (patch,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    text: str = patch["data"]["providers.yaml"]
    return text


def test_the_component_lists_its_files_and_holds_no_secret() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    listed = set(kustomization["resources"]) | {p["path"] for p in kustomization["patches"]}
    files = _files()
    assert listed == set(files) - {"kustomization.yaml"}
    assert not [d for docs in files.values() for d in docs if d["kind"] == "Secret"]


def test_the_provisioner_runs_its_console_script_with_the_usual_flags() -> None:
    pyproject = tomllib.loads((ROOT / "services/provisioner-k8s/pyproject.toml").read_text())
    assert "proxyfleet-provisioner-k8s" in pyproject["project"]["scripts"]
    dep = named(_files()["provisioner-k8s.yaml"], "Deployment", "provisioner-k8s")
    (container,) = pod_spec(dep)["containers"]
    assert container["command"] == ["proxyfleet-provisioner-k8s"]
    assert container["args"] == [
        *("--provider", "cluster", "--metrics-host", "0.0.0.0", "--metrics-port", "9090")
    ]
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"configMapRef": {"name": "proxyfleet-env"}} in container["envFrom"]


def test_the_image_holds_every_workspace_member_and_so_the_k8s_console_script() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "uv sync --all-packages --frozen --no-dev --no-editable" in dockerfile
    assert workspace_member("services/provisioner-k8s")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_role_anywhere_has_a_wildcard_or_cluster_scope(overlay: str) -> None:
    docs = render(overlay)
    assert not of_kind(docs, "ClusterRole")
    assert not of_kind(docs, "ClusterRoleBinding")
    for role in of_kind(docs, "Role"):
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key], (role["metadata"]["name"], key)
            assert "resourceNames" not in rule
            assert "nonResourceURLs" not in rule


@pytest.mark.parametrize("overlay", WITH_K8S)
def test_the_role_is_exactly_the_provisioners_calls_in_the_proxies_namespace(
    overlay: str,
) -> None:
    docs = render(overlay)
    role = named(docs, "Role", "proxyfleet-provisioner")
    assert role["metadata"]["namespace"] == PROXIES_NS
    assert role["rules"] == ROLE_RULES
    (binding,) = [
        b for b in of_kind(docs, "RoleBinding") if b["roleRef"]["name"] == role["metadata"]["name"]
    ]
    assert binding["metadata"]["namespace"] == PROXIES_NS
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    (subject,) = binding["subjects"]
    sa = named(docs, "ServiceAccount", subject["name"])
    assert subject == {
        "kind": "ServiceAccount",
        "name": "provisioner-k8s",
        "namespace": "proxyfleet",
    }
    assert sa["metadata"]["namespace"] == "proxyfleet"
    assert (
        pod_spec(named(docs, "Deployment", "provisioner-k8s"))["serviceAccountName"]
        == (sa["metadata"]["name"])
    )
    assert PROXIES_NS in {ns["metadata"]["name"] for ns in of_kind(docs, "Namespace")}


@pytest.mark.parametrize("overlay", WITH_K8S)
def test_the_network_policy_admits_labelled_clients_health_and_gateway_on_the_proxy_port(
    overlay: str,
) -> None:
    docs = render(overlay)
    (policy,) = of_kind(docs, "NetworkPolicy")
    assert policy["metadata"]["namespace"] == PROXIES_NS
    spec = policy["spec"]
    assert selects(spec["podSelector"]["matchLabels"], PROXY_POD_LABELS)
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    cluster = _entry(rendered_providers_text(docs), "cluster")["kubernetes"]
    assert rule["ports"] == [{"protocol": "TCP", "port": cluster["proxy_port"]}]
    clients, *component_peers = rule["from"]
    assert clients == {"namespaceSelector": {"matchLabels": {"proxyfleet.io/proxy-client": "true"}}}
    # Of the control plane, only health (it probes through the proxies) and the gateway (it
    # tunnels through them), each a peer of its own: namespace and pods in one.
    admitted = set()
    for peer in component_peers:
        assert peer["namespaceSelector"]["matchLabels"] == {
            "kubernetes.io/metadata.name": "proxyfleet"
        }
        (name,) = [
            d["metadata"]["name"]
            for d in of_kind(docs, "Deployment")
            if d["metadata"]["namespace"] == "proxyfleet"
            and selects(
                peer["podSelector"]["matchLabels"], d["spec"]["template"]["metadata"]["labels"]
            )
        ]
        admitted.add(name)
    assert admitted == {"health", "gateway"}
    assert len(component_peers) == 2


def test_the_kubernetes_entry_is_the_same_in_dev_and_production() -> None:
    dev = _entry(_patch_text(K8S / "providers-patch.yaml"), "cluster")
    prod_text = _patch_text(DEPLOY / "kubernetes-production" / "providers-patch.yaml")
    assert _entry(prod_text, "cluster") == dev
    assert [p["name"] for p in yaml.safe_load(prod_text)["providers"]] == ["cluster"]
    assert dev["type"] == "kubernetes"
    assert dev["kubernetes"]["namespace"] == PROXIES_NS
    assert dev["kubernetes"]["kubeconfig"] == ""
    assert "image" not in dev["kubernetes"]  # the provisioner's default Squid image


@pytest.mark.parametrize("overlay", WITH_K8S)
def test_the_rendered_providers_config_parses(overlay: str) -> None:
    config = parse_providers_config(rendered_providers_text(render(overlay)), overlay)
    cluster = config.get("cluster", K8sProviderConfig)
    assert cluster.type == "kubernetes"
    settings = cluster.kubernetes
    assert settings is not None
    assert settings.namespace == PROXIES_NS
    assert settings.kubeconfig == ""


def test_production_uses_external_stores_from_a_secret_it_does_not_hold() -> None:
    docs = render("kubernetes-production")
    assert not of_kind(docs, "StatefulSet")
    names = {d["metadata"]["name"] for d in docs}
    assert not {"nats", "redis", "provisioner-local"} & names
    env = named(docs, "ConfigMap", "proxyfleet-env")["data"]
    assert "PROXYFLEET_NATS_URL" not in env
    assert "PROXYFLEET_REDIS_URL" not in env
    assert "proxyfleet-stores" not in {s["metadata"]["name"] for s in of_kind(docs, "Secret")}
    for dep in of_kind(docs, "Deployment"):
        (container,) = pod_spec(dep)["containers"]
        assert {"secretRef": {"name": "proxyfleet-stores"}} in container["envFrom"]


def test_production_runs_two_replicas_of_whatever_shares_work() -> None:
    docs = render("kubernetes-production")
    least = {
        h["spec"]["scaleTargetRef"]["name"]: h["spec"]["minReplicas"]
        for h in of_kind(docs, "HorizontalPodAutoscaler")
    }
    for dep in of_kind(docs, "Deployment"):
        if dep["metadata"]["name"] not in least:
            least[dep["metadata"]["name"]] = dep["spec"]["replicas"]
    # GC too: its replicas share the rounds by a round lock (docs/decisions/scaling.md, S3).
    assert least["gc"] == 2
    assert min(least.values()) >= 2, least
    for pdb in of_kind(docs, "PodDisruptionBudget"):
        component = pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
        assert least[component] - pdb["spec"]["maxUnavailable"] >= 1, component


def test_dev_runs_nats_and_redis_inside_and_both_provisioners() -> None:
    docs = render("kubernetes-dev")
    assert {s["metadata"]["name"] for s in of_kind(docs, "StatefulSet")} == {"nats", "redis"}
    env = named(docs, "ConfigMap", "proxyfleet-env")["data"]
    assert env["PROXYFLEET_NATS_URL"] == "nats://nats:4222"
    assert env["PROXYFLEET_REDIS_URL"] == "redis://redis:6379/0"
    assert {named(docs, "Service", n)["metadata"]["name"] for n in ("nats", "redis")}
    deployments = {d["metadata"]["name"]: d for d in of_kind(docs, "Deployment")}
    assert {"provisioner-local", "provisioner-k8s"} <= set(deployments)
    assert deployments["gc"]["spec"]["replicas"] == 1  # a laptop needs no standby
    text = rendered_providers_text(docs)
    assert [p["name"] for p in yaml.safe_load(text)["providers"]] == ["local", "cluster"]
