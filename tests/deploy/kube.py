"""Rendering and validating the kustomize overlays of deploy/ for the deploy tests.

`kubectl` (.venv/bin/kubectl) and `kubernetes-validate` are dev dependencies, on PATH under
`uv run`: a missing one fails the tests, it never skips them."""

from __future__ import annotations

import base64
import fnmatch
import functools
import json
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

OVERLAYS = (
    "kubernetes",
    "kubernetes-dev",
    "kubernetes-production",
    "kubernetes-kvm",
    "kubernetes-gcp",
    "kubernetes-gcp-key",
    "kubernetes-static",
    "kubernetes-static-ca",
    "kubernetes-ha",
)
"""Every kustomization under deploy/ that is applied as it is (the components and
deploy/kubernetes/core are rendered through these)."""

KUBERNETES_VERSIONS = ("1.30", "1.37")
"""Validated against both: the oldest release we support (autoscaling/v2, policy/v1 PDBs
and the kubernetes.io/metadata.name namespace label are older) and the newest the
validator knows (that of the kubectl we ship)."""

CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): Path(__file__).parent
    / "schemas"
    / "servicemonitor-monitoring-v1.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): Path(__file__).parent
    / "schemas"
    / "prometheusrule-monitoring-v1.json",
}
"""Custom resources kubernetes-validate has no schema for (it only warns about them),
validated instead against a strict schema of our own."""

Doc = dict[str, Any]

CLUSTER_SCOPED = frozenset({"Namespace", "CustomResourceDefinition"})
"""Kinds of deploy/ that live in no namespace."""


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found is not None, f"{name} is a dev dependency: run `make setup` and `uv run`"
    return found


@functools.cache
def _render_text(overlay: str) -> str:
    out = subprocess.run(
        [tool("kubectl"), "kustomize", str(DEPLOY / overlay)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"kubectl kustomize deploy/{overlay}: {out.stderr}"
    return out.stdout


def render(overlay: str) -> list[Doc]:
    """deploy/<overlay> as `kubectl kustomize` renders it (rendered once per session; each
    call returns fresh objects)."""
    return [d for d in yaml.safe_load_all(_render_text(overlay)) if d]


def rendered_text(overlay: str) -> str:
    return _render_text(overlay)


def kubernetes_validate(path: Path, *versions: str) -> subprocess.CompletedProcess[str]:
    """`kubernetes-validate --strict` over a YAML file, once per version (not quiet: it
    prints one INFO line per document it validated). A file, not stdin: the tool reads its
    input again for each version."""
    args = [tool("kubernetes-validate"), "--strict"]
    for version in versions:
        args += ["-k", version]
    return subprocess.run(
        [*args, str(path)], check=False, capture_output=True, text=True, timeout=60
    )


def crd_schema(doc: Doc) -> dict[str, Any] | None:
    path = CRD_SCHEMAS.get((doc["apiVersion"], doc["kind"]))
    if path is None:
        return None
    schema: dict[str, Any] = json.loads(path.read_text())
    return schema


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind]


def named(docs: list[Doc], kind: str, name: str) -> Doc:
    (doc,) = [d for d in of_kind(docs, kind) if d["metadata"]["name"] == name]
    return doc


def pod_spec(workload: Doc) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def providers_text(docs: list[Doc]) -> str:
    text: str = named(docs, "ConfigMap", "proxyfleet-providers")["data"]["providers.yaml"]
    return text


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Whether a matchLabels selector matches these labels."""
    return all(labels.get(key) == value for key, value in selector.items())


def container_env(docs: list[Doc], container: dict[str, Any]) -> dict[str, str]:
    """The environment Kubernetes gives a container: its envFrom ConfigMaps and Secrets in
    order, then its env (which wins), resolved against the rendered objects. Only the forms
    deploy/ uses; anything else (or a missing object or key) fails the test."""

    def data(kind: str, name: str) -> dict[str, str]:
        doc = named(docs, kind, name)
        if kind == "Secret":
            found = {k: base64.b64decode(v).decode() for k, v in doc.get("data", {}).items()}
            plain: dict[str, str] = doc.get("stringData", {})
            return found | plain
        values: dict[str, str] = doc["data"]
        return values

    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        ((ref, target),) = source.items()
        kind = {"configMapRef": "ConfigMap", "secretRef": "Secret"}[ref]
        env |= data(kind, target["name"])
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        ((ref, target),) = var["valueFrom"].items()
        kind = {"configMapKeyRef": "ConfigMap", "secretKeyRef": "Secret"}[ref]
        env[var["name"]] = data(kind, target["name"])[target["key"]]
    return env


def admits(policy: Doc, docs: list[Doc], workload: Doc, port: int) -> bool:
    """Whether a NetworkPolicy's ingress rules admit the pods of a workload, on a TCP port
    (matchLabels selectors only, as in deploy/; another form fails the test)."""
    namespace = workload["metadata"]["namespace"]
    # The API server labels every namespace with its name.
    ns_labels = {"kubernetes.io/metadata.name": namespace}
    ns_labels |= named(docs, "Namespace", namespace)["metadata"].get("labels", {})
    pod_labels = workload["spec"]["template"]["metadata"]["labels"]

    def matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
        if selector is None:
            return True
        assert set(selector) <= {"matchLabels"}, selector
        return selects(selector.get("matchLabels", {}), labels)

    def peer_admits(peer: dict[str, Any]) -> bool:
        assert set(peer) <= {"namespaceSelector", "podSelector"}, peer
        if "namespaceSelector" not in peer and namespace != policy["metadata"]["namespace"]:
            return False  # a podSelector alone selects pods of the policy's namespace
        return matches(peer.get("namespaceSelector"), ns_labels) and matches(
            peer.get("podSelector"), pod_labels
        )

    for rule in policy["spec"].get("ingress", []):
        # No ports or no peers: every port, every source.
        ports = rule.get("ports")
        if ports and not any(
            p.get("protocol", "TCP") == "TCP" and p["port"] == port for p in ports
        ):
            continue
        peers = rule.get("from")
        if not peers or any(peer_admits(peer) for peer in peers):
            return True
    return False


def workspace_member(folder: str) -> bool:
    """Whether the root pyproject.toml's workspace takes `folder` (its members are patterns
    such as services/*) and the folder is a package (a pyproject.toml of its own)."""
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    return (ROOT / folder / "pyproject.toml").is_file() and any(
        fnmatch.fnmatchcase(folder, pattern) for pattern in members["members"]
    )
