"""Cross-object checks of every rendered overlay: what a schema cannot see. Each Deployment
runs as its own existing ServiceAccount, non-root, with probes and resources; each
PodDisruptionBudget, HorizontalPodAutoscaler and Service selects an existing Deployment's
pods; the metrics Service and ServiceMonitor reach every service once; one image for all."""

from __future__ import annotations

from typing import Any

import pytest
from tests.deploy.kube import (
    CLUSTER_SCOPED,
    OVERLAYS,
    Doc,
    named,
    of_kind,
    pod_spec,
    render,
    selects,
)

TOKEN_MOUNTED = {"provisioner-k8s", "pool-operator"}
"""The services that call the Kubernetes API, hence the only mounted tokens."""
WRITABLE_ROOT = {"provisioner-local"}
"""Its Squids write outside the state volume (deploy/kubernetes/provisioner-local.yaml)."""
SERVING_PORTS = {"gateway": ["proxy", "socks"]}
"""Ports beside a pod's health and metrics server: the gateway's proxy endpoint and SOCKS5
listener (the API's REST routes share that server's port, `http`)."""


def _pod_labels(workload: Doc) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def _workloads(docs: list[Doc]) -> list[Doc]:
    return of_kind(docs, "Deployment") + of_kind(docs, "StatefulSet")


def _selected(docs: list[Doc], namespace: str, selector: dict[str, str]) -> list[Doc]:
    return [
        w
        for w in _workloads(docs)
        if w["metadata"]["namespace"] == namespace and selects(selector, _pod_labels(w))
    ]


def _port_names(workload: Doc) -> list[str]:
    (container,) = pod_spec(workload)["containers"]
    return [p["name"] for p in container["ports"]]


def _health_port(docs: list[Doc], workload: Doc) -> str:
    """The container port of the health and metrics server: the one port that the metrics
    Service targets (`http`, or the gateway's `metrics`)."""
    metrics = named(docs, "Service", "proxyfleet-metrics")
    targets = {p["targetPort"] for p in metrics["spec"]["ports"]}
    (port,) = [name for name in _port_names(workload) if name in targets]
    return port


@pytest.fixture(params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    overlay: str = request.param
    return render(overlay)


def test_every_workload_runs_as_its_own_existing_service_account(docs: list[Doc]) -> None:
    accounts = {
        (sa["metadata"]["namespace"], sa["metadata"]["name"]): sa
        for sa in of_kind(docs, "ServiceAccount")
    }
    used = []
    for workload in _workloads(docs):
        name = workload["metadata"]["name"]
        account = pod_spec(workload)["serviceAccountName"]
        assert account == name
        sa = accounts[(workload["metadata"]["namespace"], account)]
        assert sa["automountServiceAccountToken"] is (name in TOKEN_MOUNTED), name
        assert "automountServiceAccountToken" not in pod_spec(workload)  # the SA decides
        used.append(account)
    assert len(used) == len(set(used))


def test_every_deployment_is_non_root_probed_and_bounded(docs: list[Doc]) -> None:
    for dep in of_kind(docs, "Deployment"):
        name = dep["metadata"]["name"]
        spec = pod_spec(dep)
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = spec["containers"]
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False, name
        assert security["capabilities"] == {"drop": ["ALL"]}, name
        assert security["readOnlyRootFilesystem"] is (name not in WRITABLE_ROOT), name
        health = _health_port(docs, dep)
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": health}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": health}
        resources = container["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]), name
        assert "memory" in resources["limits"], name
        assert sorted(_port_names(dep)) == sorted([health, *SERVING_PORTS.get(name, [])]), name


def test_every_deployment_of_ours_uses_the_one_image(docs: list[Doc]) -> None:
    images = {pod_spec(d)["containers"][0]["image"] for d in of_kind(docs, "Deployment")}
    assert len(images) == 1
    (image,) = images
    assert image.startswith("ghcr.io/example/proxyfleet:")


def test_budgets_and_autoscalers_select_an_existing_deployment(docs: list[Doc]) -> None:
    deployments = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d for d in of_kind(docs, "Deployment")
    }
    budgets = of_kind(docs, "PodDisruptionBudget")
    # Every Deployment has exactly one budget, and each budget selects exactly one workload
    # (a StatefulSet of replicated stores too: deploy/kubernetes/ha).
    covered = []
    for pdb in budgets:
        (workload,) = _selected(
            docs, pdb["metadata"]["namespace"], pdb["spec"]["selector"]["matchLabels"]
        )
        assert pdb["spec"] == {"maxUnavailable": 1, "selector": pdb["spec"]["selector"]}
        covered.append(
            (workload["kind"], workload["metadata"]["namespace"], workload["metadata"]["name"])
        )
    assert len(covered) == len(set(covered))
    assert sorted((ns, name) for kind, ns, name in covered if kind == "Deployment") == sorted(
        deployments
    )
    autoscaled = set()
    for hpa in of_kind(docs, "HorizontalPodAutoscaler"):
        target = hpa["spec"]["scaleTargetRef"]
        assert (target["apiVersion"], target["kind"]) == ("apps/v1", "Deployment")
        dep = deployments[(hpa["metadata"]["namespace"], target["name"])]
        # The HPA owns the count: a `replicas` in the Deployment would be reset on apply.
        assert "replicas" not in dep["spec"]
        assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
        autoscaled.add(target["name"])
    assert autoscaled == {"api", "gateway", "health"}


def test_services_select_existing_pods_on_a_named_port(docs: list[Doc]) -> None:
    """Every selected pod has a port of the Service, and every port of it reaches a pod (a
    pod without a port's target is no endpoint of that port: proxyfleet-metrics has one port
    per name its pods use)."""
    for service in of_kind(docs, "Service"):
        name = service["metadata"]["name"]
        pods = _selected(docs, service["metadata"]["namespace"], service["spec"]["selector"])
        assert pods, name
        reached = set()
        for workload in pods:
            (container,) = pod_spec(workload)["containers"]
            ports = {p["name"]: p["containerPort"] for p in container["ports"]}
            served = {
                p["port"]
                for p in service["spec"]["ports"]
                if p["targetPort"] in ports or p["targetPort"] in ports.values()
            }
            assert served, (name, workload["metadata"]["name"])
            reached |= served
        assert reached == {p["port"] for p in service["spec"]["ports"]}, name


def test_the_metrics_service_covers_every_service_of_ours(docs: list[Doc]) -> None:
    metrics = named(docs, "Service", "proxyfleet-metrics")
    assert metrics["spec"]["clusterIP"] == "None"
    scraped = {
        w["metadata"]["name"] for w in _selected(docs, "proxyfleet", metrics["spec"]["selector"])
    }
    assert scraped == {d["metadata"]["name"] for d in of_kind(docs, "Deployment")}
    # Each pod is an endpoint of exactly one port: scraped once, on its metrics server.
    for dep in of_kind(docs, "Deployment"):
        targets = [p["targetPort"] for p in metrics["spec"]["ports"]]
        assert [t for t in targets if t in _port_names(dep)] == [_health_port(docs, dep)]
    for monitor in of_kind(docs, "ServiceMonitor"):
        assert selects(monitor["spec"]["selector"]["matchLabels"], metrics["metadata"]["labels"])
        assert monitor["spec"]["namespaceSelector"]["matchNames"] == ["proxyfleet"]
        ports = {p["name"] for p in metrics["spec"]["ports"]}
        assert sorted((e["port"], e["path"]) for e in monitor["spec"]["endpoints"]) == [
            (port, "/metrics") for port in sorted(ports)
        ]


def test_everything_is_in_a_namespace_the_overlay_creates(docs: list[Doc]) -> None:
    namespaces = {ns["metadata"]["name"] for ns in of_kind(docs, "Namespace")}
    used: set[Any] = {
        d["metadata"].get("namespace") for d in docs if d["kind"] not in CLUSTER_SCOPED
    }
    assert used <= namespaces
    assert "proxyfleet" in used
