"""Offline checks of deploy/kubernetes (the base, with the shared control plane in core/):
every service is a Deployment running a real console script of the workspace, with health
probes, and nothing references a missing file; the kvm component adds the KVM provisioner,
its SSH key Secret and providers config."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.deploy.kube import CLUSTER_SCOPED, render

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_kvm.pure.config import KvmProviderConfig

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
CORE = K8S / "core"


def _docs() -> list[dict[str, Any]]:
    """The base's own manifests and those of core/ (not the components)."""
    docs: list[dict[str, Any]] = []
    for path in sorted([*K8S.glob("*.yaml"), *CORE.glob("*.yaml")]):
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
    for folder, extra in ((K8S, {"core"}), (CORE, set())):
        kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
        listed = set(kustomization["resources"])
        present = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
        assert listed == present | extra


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


# The KVM provisioner: a kustomize Component in deploy/kubernetes/kvm (an overlay below its
# base is refused by kustomize), used by an overlay outside: resources base, components kvm.
KVM = K8S / "kvm"


def _kvm_files() -> dict[str, list[dict[str, Any]]]:
    return {
        path.name: [d for d in yaml.safe_load_all(path.read_text()) if d]
        for path in sorted(KVM.glob("*.yaml"))
    }


def _container(dep: dict[str, Any]) -> dict[str, Any]:
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = container
    return found


def _kvm_deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (dep,) = [
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "provisioner-kvm"
    ]
    return dep


def _providers_text(docs: list[dict[str, Any]]) -> str:
    (cm,) = [
        d
        for d in docs
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "proxyfleet-providers"
    ]
    text: str = cm["data"]["providers.yaml"]
    return text


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    """deploy/kubernetes-kvm (the base with the kvm component), as `kubectl kustomize`
    renders it."""
    return render("kubernetes-kvm")


def test_kvm_kustomization_lists_its_files_and_holds_no_key() -> None:
    kustomization = yaml.safe_load((KVM / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    listed = set(kustomization["resources"]) | {p["path"] for p in kustomization["patches"]}
    files = _kvm_files()
    assert listed == set(files) - {"kustomization.yaml"}
    # The SSH key Secret is created by the operator, never committed.
    assert not [d for docs in files.values() for d in docs if d["kind"] == "Secret"]
    assert not [p for p in KVM.iterdir() if "PRIVATE KEY" in p.read_text()]


def test_kvm_provisioner_runs_its_console_script_with_probes_as_non_root() -> None:
    dep = _kvm_deployment(_kvm_files()["provisioner-kvm.yaml"])
    container = _container(dep)
    assert container["command"] == ["proxyfleet-provisioner-kvm"]
    assert container["command"][0] in _console_scripts()
    assert container["args"] == [
        *("--provider", "onprem", "--metrics-host", "0.0.0.0", "--metrics-port", "9090")
    ]
    assert container["ports"] == [{"name": "http", "containerPort": 9090}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"configMapRef": {"name": "proxyfleet-env"}} in container["envFrom"]
    pod_security = dep["spec"]["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    # The key file is root-owned: the kubelet gives it the fsGroup so the user may read it.
    assert pod_security["fsGroup"] == pod_security["runAsUser"] != 0
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_kvm_ssh_key_comes_from_a_secret_volume_mounted_read_only() -> None:
    dep = _kvm_deployment(_kvm_files()["provisioner-kvm.yaml"])
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in _container(dep)["volumeMounts"]}
    key_mount = mounts["/etc/proxyfleet/kvm"]
    assert key_mount["readOnly"] is True
    secret = volumes[key_mount["name"]]["secret"]
    assert secret["secretName"] == "proxyfleet-kvm-ssh"
    assert secret["defaultMode"] == 0o400
    assert volumes[mounts["/etc/proxyfleet"]["name"]] == {
        "name": "providers",
        "configMap": {"name": "proxyfleet-providers"},
    }
    assert "emptyDir" in volumes[mounts["/var/cache/proxyfleet/images"]["name"]]


def test_kvm_providers_patch_parses_and_matches_the_deployment() -> None:
    (patch,) = _kvm_files()["providers-patch.yaml"]
    config = parse_providers_config(_providers_text([patch]), "providers-patch.yaml")
    assert {p.name: p.type for p in config.providers} == {"local": "local", "onprem": "kvm"}
    kvm = config.get("onprem", KvmProviderConfig).kvm
    assert kvm is not None
    dep = _kvm_deployment(_kvm_files()["provisioner-kvm.yaml"])
    mounts = {m["mountPath"]: m for m in _container(dep)["volumeMounts"]}
    assert kvm.image_cache_dir in mounts
    secret = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if "secret" in v)
    key_paths = {f"/etc/proxyfleet/kvm/{item['path']}" for item in secret["secret"]["items"]}
    assert {host.ssh_key_file for host in kvm.hosts} <= key_paths
    # The base's local provider is kept as it is.
    (base_cm,) = [d for d in _docs() if d["metadata"]["name"] == "proxyfleet-providers"]
    base = parse_providers_config(_providers_text([base_cm]), "config.yaml")
    assert config.get("local") == base.get("local")


def test_kvm_component_renders_on_the_base(rendered: list[dict[str, Any]]) -> None:
    deployments = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}
    base_deployments = {d["metadata"]["name"] for d in _docs() if d["kind"] == "Deployment"}
    assert set(deployments) == base_deployments | {"provisioner-kvm"}
    assert {
        d["metadata"].get("namespace") for d in rendered if d["kind"] not in CLUSTER_SCOPED
    } == {"proxyfleet"}
    # One image for every service, the kvm provisioner included.
    assert len({_container(d)["image"] for d in deployments.values()}) == 1
    config = parse_providers_config(_providers_text(rendered), "rendered providers.yaml")
    assert {p.name for p in config.providers} == {"local", "onprem"}
    assert config.get("onprem").type == "kvm"


LISTEN_FLAGS = {"proxyfleet-api": ("--host",), "proxyfleet-gateway": ("--host", "--metrics-host")}
"""The address flags of each server a pod runs, where not just --metrics-host: the API
serves its probes on its own port; the gateway has its proxy endpoint beside them."""


def test_health_servers_listen_on_every_interface_by_explicit_choice() -> None:
    """The services' /healthz /readyz /metrics servers default to 127.0.0.1; a pod's
    kubelet probes reach them only when the manifest asks for 0.0.0.0."""
    deployments = [d for d in _docs() if d["kind"] == "Deployment"]
    deployments += [_kvm_deployment(_kvm_files()["provisioner-kvm.yaml"])]
    checked = set()
    for dep in deployments:
        container = _container(dep)
        if not str(container["command"][0]).startswith("proxyfleet-"):
            continue  # NATS and Redis
        args = container["args"]
        for flag in LISTEN_FLAGS.get(container["command"][0], ("--metrics-host",)):
            assert args[args.index(flag) + 1] == "0.0.0.0", (dep["metadata"]["name"], flag)
        checked.add(dep["metadata"]["name"])
    assert checked == {
        "api",
        "gateway",
        "gc",
        "pools",
        "health",
        "pool-operator",
        "provisioner-local",
        "provisioner-kvm",
    }
