"""Offline checks of the static provisioner's kustomize component (deploy/kubernetes/static),
its CA bundle component for https upstreams (deploy/kubernetes/static-ca) and both overlays,
rendered with `kubectl kustomize` like the others. The list of proxies carries passwords:
it is a Secret the operator creates, mounted in the provisioner's pod only, and re-read
there every `refresh` (a whole-directory mount, which the kubelet updates in place)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from tests.deploy.kube import (
    CLUSTER_SCOPED,
    DEPLOY,
    Doc,
    container_env,
    named,
    of_kind,
    render,
    workspace_member,
)
from tests.deploy.test_manifests import _console_scripts, _container, _docs, _providers_text
from tests.deploy.test_manifests_gateway import _settings, _with_operator_secrets

from proxyfleet.common.host.command import all_options
from proxyfleet.common.host.options import env_name
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.gateway.main import SERVICE as GATEWAY
from proxyfleet.gateway.settings import GatewaySettings
from proxyfleet.health.main import SERVICE as HEALTH
from proxyfleet.provisioner_static.main import SERVICE as STATIC
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig
from proxyfleet.provisioner_static.settings import StaticProvisionerSettings

ROOT = Path(__file__).resolve().parents[2]
STATIC_DIR = ROOT / "deploy" / "kubernetes" / "static"
CA_DIR = ROOT / "deploy" / "kubernetes" / "static-ca"
LIST_SECRET = "proxyfleet-static-proxies"
CA_CONFIGMAP = "proxyfleet-upstream-ca"
CREDENTIALS_IN_URL = re.compile(r"://[^/\s@]+:[^/\s@]+@")


def _files(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
        for p in sorted(folder.glob("*.yaml"))
    }


def _deployment(docs: list[Doc]) -> Doc:
    return named(docs, "Deployment", "provisioner-static")


def _static_entry(providers_text: str) -> StaticProviderConfig:
    config = parse_providers_config(providers_text, "providers.yaml")
    (entry,) = [p for p in config.providers if p.type == "static"]
    assert isinstance(entry, StaticProviderConfig)
    return entry


def _secret_volumes(dep: Doc) -> dict[str, Doc]:
    """mountPath -> the Secret volume mounted there."""
    spec = dep["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    return {
        m["mountPath"]: volumes[m["name"]]["secret"]
        for m in _container(dep).get("volumeMounts", [])
        if "secret" in volumes[m["name"]]
    }


def test_the_components_list_their_files_and_hold_no_secret() -> None:
    for folder in (STATIC_DIR, CA_DIR):
        kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
        assert kustomization["kind"] == "Component"
        listed = set(kustomization.get("resources", [])) | {
            p["path"] for p in kustomization["patches"]
        }
        files = _files(folder)
        assert listed == set(files) - {"kustomization.yaml"}
        assert not [d for docs in files.values() for d in docs if d["kind"] == "Secret"]
        # Neither a proxy list nor a CA bundle is committed: the operator creates both.
        configmaps = [d for docs in files.values() for d in docs if d["kind"] == "ConfigMap"]
        assert {d["metadata"]["name"] for d in configmaps} <= {"proxyfleet-providers"}
        for path in folder.iterdir():
            assert "BEGIN CERTIFICATE" not in path.read_text(), path.name
            assert not CREDENTIALS_IN_URL.search(path.read_text()), path.name


def test_the_provisioner_runs_its_console_script_with_probes_as_non_root() -> None:
    dep = _deployment(_files(STATIC_DIR)["provisioner-static.yaml"])
    container = _container(dep)
    assert container["command"] == ["proxyfleet-provisioner-static"]
    assert container["command"][0] in _console_scripts()
    args = container["args"]
    assert args[args.index("--metrics-host") + 1] == "0.0.0.0"
    flags = {spec.flag for spec in all_options(STATIC)}
    assert {a for a in args if a.startswith("--")} <= flags
    assert container["ports"] == [{"name": "http", "containerPort": 9090}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"configMapRef": {"name": "proxyfleet-env"}} in container["envFrom"]
    spec = dep["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "provisioner-static"
    # The list file is root-owned: the kubelet gives it the fsGroup so the user may read it.
    assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # One replica syncs at a time (a lock in Redis); any handles intents: two are safe.
    assert dep["spec"]["replicas"] >= 2


def test_the_image_holds_every_workspace_member_and_so_the_static_console_script() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "uv sync --all-packages --frozen --no-dev --no-editable" in dockerfile
    assert workspace_member("services/provisioner-static")
    pyproject = tomllib.loads((ROOT / "services/provisioner-static/pyproject.toml").read_text())
    assert "proxyfleet-provisioner-static" in pyproject["project"]["scripts"]


def test_the_providers_patch_parses_keeps_the_local_provider_and_names_the_provisioner() -> None:
    (patch,) = _files(STATIC_DIR)["providers-patch.yaml"]
    text = _providers_text([patch])
    config = parse_providers_config(text, "providers-patch.yaml")
    assert {p.name: p.type for p in config.providers} == {"local": "local", "byo": "static"}
    (base_cm,) = [d for d in _docs() if d["metadata"]["name"] == "proxyfleet-providers"]
    base = parse_providers_config(_providers_text([base_cm]), "config.yaml")
    assert config.get("local") == base.get("local")
    args = _container(_deployment(_files(STATIC_DIR)["provisioner-static.yaml"]))["args"]
    assert args[args.index("--provider") + 1] == "byo"


def test_the_configmap_holds_no_credential_only_a_file_source_of_the_secret() -> None:
    """Every service mounts the providers ConfigMap: the static entry has neither inline
    proxies nor a vendor (whose password is inline), only files of the list Secret."""
    (patch,) = _files(STATIC_DIR)["providers-patch.yaml"]
    static = _static_entry(_providers_text([patch])).static
    assert static.proxies == []
    assert static.vendor is None
    assert static.sources
    assert all(src.file and not src.url for src in static.sources)
    dep = _deployment(_files(STATIC_DIR)["provisioner-static.yaml"])
    secrets = _secret_volumes(dep)
    for src in static.sources:
        mount = str(Path(src.file).parent)
        assert secrets[mount]["secretName"] == LIST_SECRET
        assert secrets[mount]["defaultMode"] == 0o400
        assert Path(src.file).name in {item["path"] for item in secrets[mount]["items"]}


def test_a_changed_secret_reaches_the_provisioner_without_a_restart_or_sighup() -> None:
    """The kubelet updates a Secret volume in place (not a subPath mount), and the
    provisioner reads each file again every `refresh`: a replaced Secret applies within
    the kubelet's sync (about a minute) plus that refresh."""
    (patch,) = _files(STATIC_DIR)["providers-patch.yaml"]
    static = _static_entry(_providers_text([patch])).static
    container = _container(_deployment(_files(STATIC_DIR)["provisioner-static.yaml"]))
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for src in static.sources:
        mount = mounts[str(Path(src.file).parent)]
        assert "subPath" not in mount
        assert "subPathExpr" not in mount
        assert mount["readOnly"] is True
        assert src.refresh <= 60


def test_the_overlay_renders_on_the_base_and_only_the_provisioner_mounts_the_list() -> None:
    for overlay in ("kubernetes-static", "kubernetes-static-ca"):
        rendered = render(overlay)
        deployments = {d["metadata"]["name"]: d for d in of_kind(rendered, "Deployment")}
        base = {d["metadata"]["name"] for d in _docs() if d["kind"] == "Deployment"}
        assert set(deployments) == base | {"provisioner-static"}
        assert len({_container(d)["image"] for d in deployments.values()}) == 1
        assert {
            d["metadata"].get("namespace") for d in rendered if d["kind"] not in CLUSTER_SCOPED
        } == {"proxyfleet"}
        assert _static_entry(_providers_text(rendered)).name == "byo"
        with_list = {
            name
            for name, dep in deployments.items()
            if any(s["secretName"] == LIST_SECRET for s in _secret_volumes(dep).values())
        }
        assert with_list == {"provisioner-static"}, overlay


def test_the_provisioner_reads_the_rendered_providers_file_for_its_provider() -> None:
    """Its settings as its own command line and env rules build them in the pod."""
    docs = _with_operator_secrets(render("kubernetes-static"))
    common, own = _settings(STATIC, docs, "provisioner-static")
    assert isinstance(own, StaticProvisionerSettings)
    folder, file = common.providers_config.rsplit("/", 1)
    container = _container(named(docs, "Deployment", "provisioner-static"))
    assert {"name": "providers", "mountPath": folder} in container["volumeMounts"]
    config = parse_providers_config(_providers_text(docs), file)
    assert config.get(own.provider, StaticProviderConfig).type == "static"


def test_the_ca_overlay_gives_health_and_the_gateway_the_bundle_and_nothing_else() -> None:
    plain = {d["metadata"]["name"]: d for d in of_kind(render("kubernetes-static"), "Deployment")}
    docs = render("kubernetes-static-ca")
    with_ca = {d["metadata"]["name"]: d for d in of_kind(docs, "Deployment")}
    changed = {name for name in with_ca if with_ca[name] != plain[name]}
    assert changed == {"gateway", "health"}
    # The gateway's --upstream-ca-bundle; health's --proxy-ca-bundle (the variable the
    # settings rule derives for that field).
    variables = {
        "gateway": env_name("gateway", "upstream_ca_bundle", common=False),
        "health": env_name("health", "proxy_ca_bundle", common=False),
    }
    assert variables["gateway"] in {spec.env for spec in all_options(GATEWAY)}
    assert variables["health"] in {spec.env for spec in all_options(HEALTH)}
    for name, variable in variables.items():
        dep = with_ca[name]
        container = _container(dep)
        bundle = container_env(docs, container)[variable]
        volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
        (mount,) = [
            m for m in container["volumeMounts"] if m["mountPath"] == str(Path(bundle).parent)
        ]
        assert mount["readOnly"] is True
        source = volumes[mount["name"]]["configMap"]
        assert source["name"] == CA_CONFIGMAP
        assert {item["path"] for item in source["items"]} == {Path(bundle).name}
    # The gateway reads it as its --upstream-ca-bundle, and keeps its client tokens.
    _, gateway = _settings(GATEWAY, _with_operator_secrets(docs), "gateway")
    assert isinstance(gateway, GatewaySettings)
    assert gateway.upstream_ca_bundle == "/etc/proxyfleet/upstream-ca/ca.pem"
    assert gateway.client_tokens
