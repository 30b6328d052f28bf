"""Offline checks of the GCP provisioner's kustomize component (deploy/kubernetes/gcp), its
key-Secret component and both overlays, rendered with `kubectl kustomize` like the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from tests.deploy.kube import CLUSTER_SCOPED, named, render
from tests.deploy.test_manifests import _console_scripts, _container, _docs, _providers_text

from proxyfleet.common.providers import parse_providers_config

ROOT = Path(__file__).resolve().parents[2]
GCP = ROOT / "deploy" / "kubernetes" / "gcp"
KEY = ROOT / "deploy" / "kubernetes" / "gcp-key"


def _files(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
        for p in sorted(folder.glob("*.yaml"))
    }


def _render(overlay: str) -> list[dict[str, Any]]:
    return render(overlay)


def _deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (dep,) = [
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "provisioner-gcp"
    ]
    return dep


def test_the_components_list_their_files_and_hold_no_secret() -> None:
    for folder in (GCP, KEY):
        kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
        assert kustomization["kind"] == "Component"
        listed = set(kustomization.get("resources", [])) | {
            p["path"] for p in kustomization["patches"]
        }
        files = _files(folder)
        assert listed == set(files) - {"kustomization.yaml"}
        assert not [d for docs in files.values() for d in docs if d["kind"] == "Secret"]
        assert not [p for p in folder.iterdir() if "PRIVATE KEY" in p.read_text()]


def test_the_provisioner_runs_its_console_script_with_probes_as_non_root() -> None:
    dep = _deployment(_files(GCP)["provisioner-gcp.yaml"])
    container = _container(dep)
    assert container["command"] == ["proxyfleet-provisioner-gcp"]
    assert container["command"][0] in _console_scripts()
    args = container["args"]
    assert args[args.index("--metrics-host") + 1] == "0.0.0.0"
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "provisioner-gcp"
    assert dep["spec"]["replicas"] >= 2  # replicas are safe (docs/gcp-provider.md)


def test_the_providers_patch_parses_and_keeps_the_base_local_provider() -> None:
    (patch,) = _files(GCP)["providers-patch.yaml"]
    config = parse_providers_config(_providers_text([patch]), "providers-patch.yaml")
    assert {p.name: p.type for p in config.providers} == {"local": "local", "cloud": "gcp"}
    dep = _deployment(_files(GCP)["provisioner-gcp.yaml"])
    args = _container(dep)["args"]
    assert args[args.index("--provider") + 1] == "cloud"
    (base_cm,) = [d for d in _docs() if d["metadata"]["name"] == "proxyfleet-providers"]
    base = parse_providers_config(_providers_text([base_cm]), "config.yaml")
    assert config.get("local") == base.get("local")


def test_workload_identity_overlay_renders_on_the_base() -> None:
    rendered = _render("kubernetes-gcp")
    deployments = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}
    base = {d["metadata"]["name"] for d in _docs() if d["kind"] == "Deployment"}
    assert set(deployments) == base | {"provisioner-gcp"}
    assert len({_container(d)["image"] for d in deployments.values()}) == 1
    sa = named(rendered, "ServiceAccount", "provisioner-gcp")
    assert "iam.gke.io/gcp-service-account" in sa["metadata"]["annotations"]
    assert {
        d["metadata"].get("namespace") for d in rendered if d["kind"] not in CLUSTER_SCOPED
    } == {"proxyfleet"}
    config = parse_providers_config(_providers_text(rendered), "rendered providers.yaml")
    assert config.get("cloud").type == "gcp"


def test_key_overlay_mounts_the_secret_read_only_for_adc() -> None:
    dep = _deployment(_render("kubernetes-gcp-key"))
    container = _container(dep)
    env = {e["name"]: e["value"] for e in container["env"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/etc/proxyfleet/gcp"]["readOnly"] is True
    assert env["GOOGLE_APPLICATION_CREDENTIALS"] == "/etc/proxyfleet/gcp/key.json"
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert volumes[mounts["/etc/proxyfleet/gcp"]["name"]]["secret"]["secretName"] == (
        "proxyfleet-gcp-key"
    )
    assert "/etc/proxyfleet" in mounts  # the providers ConfigMap is still mounted
