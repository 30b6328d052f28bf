"""Offline checks of deploy/kubernetes: every service is a Deployment running a real
console script of the workspace, with health probes, and nothing references a missing file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"


def _docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _console_scripts() -> set[str]:
    scripts: set[str] = set()
    for pyproject in ROOT.glob("services/*/pyproject.toml"):
        data = tomllib.loads(pyproject.read_text())
        scripts |= set(data.get("project", {}).get("scripts", {}))
    return scripts


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


def test_each_service_is_a_deployment_with_probes_and_a_real_command() -> None:
    scripts = _console_scripts()
    deployments = {d["metadata"]["name"]: d for d in _docs() if d["kind"] == "Deployment"}
    assert {"api", "health", "gc", "provisioner-local"} <= set(deployments)
    for name, dep in deployments.items():
        (container,) = dep["spec"]["template"]["spec"]["containers"]
        assert container["command"][0] in scripts, name
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_api_tokens_come_from_a_secret() -> None:
    api = next(d for d in _docs() if d["kind"] == "Deployment" and d["metadata"]["name"] == "api")
    env_from = api["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert {"secretRef": {"name": "proxyfleet-api-tokens"}} in env_from
