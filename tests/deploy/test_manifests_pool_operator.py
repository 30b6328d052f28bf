"""ProxyPools in every overlay (deploy/kubernetes/core): the CRD as the code generates it,
the pool operator's Deployment running its console script, its Role and RoleBinding in its
own namespace (the Role's verbs are checked against the operator's calls by
tests/pool_operator/test_rbac.py), and two replicas in production."""

from __future__ import annotations

import tomllib

import pytest
from tests.deploy.kube import OVERLAYS, ROOT, named, of_kind, pod_spec, render

from proxyfleet.pool_operator import crd


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_installs_the_crd_as_generated(overlay: str) -> None:
    docs = render(overlay)
    assert named(docs, "CustomResourceDefinition", crd.NAME) == crd.crd()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_operator_runs_with_its_role_in_its_own_namespace(overlay: str) -> None:
    docs = render(overlay)
    dep = named(docs, "Deployment", "pool-operator")
    namespace = dep["metadata"]["namespace"]
    (container,) = pod_spec(dep)["containers"]
    assert container["command"] == ["proxyfleet-pool-operator"]
    assert container["args"] == ["--metrics-host", "0.0.0.0", "--metrics-port", "9090"]
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"configMapRef": {"name": "proxyfleet-env"}} in container["envFrom"]
    assert {"name": "providers", "mountPath": "/etc/proxyfleet"} in container["volumeMounts"]
    role = named(docs, "Role", "proxyfleet-pool-operator")
    assert role["metadata"]["namespace"] == namespace
    assert {g for rule in role["rules"] for g in rule["apiGroups"]} == {crd.GROUP, ""}
    (binding,) = [
        b
        for b in of_kind(docs, "RoleBinding")
        if b["roleRef"]["name"] == "proxyfleet-pool-operator"
    ]
    assert binding["metadata"]["namespace"] == namespace
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": pod_spec(dep)["serviceAccountName"],
            "namespace": namespace,
        }
    ]


def test_production_runs_two_operators() -> None:
    dep = named(render("kubernetes-production"), "Deployment", "pool-operator")
    assert dep["spec"]["replicas"] == 2


def test_the_console_script_is_the_workspace_members() -> None:
    pyproject = tomllib.loads((ROOT / "services/pool-operator/pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["proxyfleet-pool-operator"] == (
        "proxyfleet.pool_operator.main:main"
    )
