"""The opt-in real-cluster test, checked without a cluster: it is skipped with its reason
unless asked for (and then that is a skip, not a pass), its settings are validated, the Job
it applies is job.yaml with the namespace, image and Role of deploy/, and the providers
config the journey writes is one the real parser accepts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from tests.deploy.kube import KUBERNETES_VERSIONS, kubernetes_validate
from tests.k8s.integration import cluster_journey, gate, job_runner, proxypool_cluster

from proxyfleet.common.providers import load_providers_config
from proxyfleet.provisioner_k8s.pure.config import K8sProviderConfig

ROOT = Path(__file__).parents[3]


def test_without_the_switch_it_is_skipped_with_how_to_run_it() -> None:
    reason = gate.skip_reason({"KUBECONFIG": "/somewhere"})
    assert reason is not None
    assert "make test-integration-k8s" in reason
    assert gate.ENABLE in reason
    assert gate.skip_reason({gate.ENABLE: "1"}) is None
    assert gate.skip_reason({gate.ENABLE: "yes"}) is not None  # only "1", as for gcp and kvm


def test_a_run_of_the_module_without_the_switch_reports_one_skip_and_no_pass() -> None:
    env = {k: v for k, v in os.environ.items() if k != gate.ENABLE}
    module = Path(__file__).with_name("test_real_cluster.py").relative_to(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(module), "-rs", "-p", "no:randomly",
         "-p", "no:cacheprovider", "-q"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "2 skipped" in out, out
    assert "passed" not in out, out
    assert "make test-integration-k8s" in out, out


def test_the_plan_needs_a_kubeconfig_and_known_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="KUBECONFIG"):
        gate.plan({"HOME": str(tmp_path)})
    env = {"KUBECONFIG": f"/k/one{os.pathsep}/k/two", "HOME": str(tmp_path)}
    p = gate.plan(env)
    assert (p.mode, p.kubeconfig, p.target, p.expose) == ("job", "/k/one", "local", "pod_ip")
    assert p.image == "proxyfleet:dev"
    direct = gate.plan({**env, "PROXYFLEET_K8S_MODE": "direct"})
    assert direct.target == gate.PUBLIC_TARGET  # the pods cannot reach this loopback
    for key, bad in [
        ("PROXYFLEET_K8S_MODE", "outside"),
        ("PROXYFLEET_K8S_EXPOSE", "ingress"),
    ]:
        with pytest.raises(ValueError, match=key):
            gate.plan({**env, key: bad})
    with pytest.raises(ValueError, match="TARGET_HOST"):
        gate.plan({**env, "PROXYFLEET_K8S_MODE": "direct", "PROXYFLEET_K8S_TARGET": "local"})
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("{}")
    assert gate.plan({"HOME": str(tmp_path)}).kubeconfig == str(tmp_path / ".kube" / "config")


def test_the_job_is_job_yaml_with_the_namespace_image_and_the_deploy_role() -> None:
    role = job_runner.role_manifest("it-ns")
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == "it-ns"
    docs = job_runner.job_manifests("it-ns", "registry.example/pf:1", {"PROXYFLEET_K8S_X": "y"})
    assert {d["kind"] for d in docs} == {"ServiceAccount", "RoleBinding", "Job"}
    assert {d["metadata"]["namespace"] for d in docs} == {"it-ns"}
    [binding] = [d for d in docs if d["kind"] == "RoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    [job] = [d for d in docs if d["kind"] == "Job"]
    spec = job["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert container["image"] == "registry.example/pf:1"
    env = {e["name"]: e for e in container["env"]}
    assert env["PROXYFLEET_K8S_X"]["value"] == "y"
    # The journey learns its namespace and pod IP from the downward API.
    assert env["PROXYFLEET_K8S_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.namespace"
    )
    assert env["PROXYFLEET_K8S_TARGET_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "status.podIP"
    )
    assert spec["serviceAccountName"] == next(
        d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"
    )
    [volume] = [v for v in spec["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == job_runner.CONFIGMAP_NAME
    assert container["command"][-1].endswith(job_runner.JOURNEY_FILE.name)
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert "app.kubernetes.io/managed-by" not in labels  # that marks proxy pods for GC


def test_the_journey_writes_a_providers_config_the_parser_accepts(tmp_path: Path) -> None:
    for target in (cluster_journey.LOCAL_TARGET, gate.PUBLIC_TARGET):
        settings = cluster_journey.JourneySettings(
            namespace="it-ns",
            installation_id="it-k8s-abc123",
            expose="node_port",
            squid_image="registry.example/squid:6",
            target=target,
        )
        path = tmp_path / "providers.yaml"
        path.write_text("providers:\n" + cluster_journey.provider_yaml(settings, 4443))
        k8s = (
            load_providers_config(str(path))
            .get(cluster_journey.PROVIDER, K8sProviderConfig)
            .kubernetes
        )
        assert k8s is not None
        assert (k8s.namespace, k8s.expose) == ("it-ns", "node_port")
        assert k8s.image == settings.squid_image
        assert k8s.kubeconfig == ""  # the Job's service account
        assert k8s.connect_ports == [443, 4443]
        assert k8s.deny_private_destinations is (target != cluster_journey.LOCAL_TARGET)


def test_the_journey_reads_its_settings_from_the_job_environment() -> None:
    s = cluster_journey.from_env(
        {
            "PROXYFLEET_K8S_NAMESPACE": "it-ns",
            "PROXYFLEET_K8S_INSTALLATION": "it-k8s-1",
            "PROXYFLEET_K8S_TARGET_HOST": "10.244.0.7",
        }
    )
    assert (s.namespace, s.installation_id, s.target_host) == ("it-ns", "it-k8s-1", "10.244.0.7")
    assert (s.kubeconfig, s.target, s.expose) == ("", cluster_journey.LOCAL_TARGET, "pod_ip")
    assert job_runner.figures('x\nJOURNEY {"ready_s": 4.2}\n') == {"ready_s": 4.2}
    assert job_runner.figures("Traceback ...") is None


def test_what_the_job_run_applies_validates_strictly(tmp_path: Path) -> None:
    docs = [
        job_runner.role_manifest("it-ns"),
        job_runner.journey_configmap("it-ns"),
        *job_runner.job_manifests("it-ns", "pf:1", {"PROXYFLEET_K8S_EXPOSE": "node_port"}),
    ]
    path = tmp_path / "applied.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    done = kubernetes_validate(path, *KUBERNETES_VERSIONS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_proxypool_step_runs_the_operator_with_the_deploy_role(tmp_path: Path) -> None:
    docs = proxypool_cluster.rbac_manifests("it-ns")
    assert [d["kind"] for d in docs] == ["ServiceAccount", "Role", "RoleBinding"]
    assert {d["metadata"]["namespace"] for d in docs} == {"it-ns"}
    deployed = [d for d in yaml.safe_load_all(proxypool_cluster.ROLE_FILE.read_text()) if d]
    assert docs[1]["rules"] == deployed[0]["rules"]
    assert docs[2]["subjects"] == [
        {"kind": "ServiceAccount", "name": proxypool_cluster.ACCOUNT, "namespace": "it-ns"}
    ]
    cfg = k8s_client.Configuration(host="https://203.0.113.9:6443")
    (tmp_path / "ca.crt").write_text("not read: the client only passes the path on\n")
    cfg.ssl_ca_cert = str(tmp_path / "ca.crt")
    path = proxypool_cluster.token_kubeconfig(cfg, "tok-123", "it-ns", tmp_path / "kc")
    loaded = k8s_client.Configuration()
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(path), client_configuration=loaded, persist_config=False
    )
    assert loaded.host == "https://203.0.113.9:6443"
    assert loaded.ssl_ca_cert == str(tmp_path / "ca.crt")
    header = loaded.get_api_key_with_prefix("BearerToken") or loaded.get_api_key_with_prefix(
        "authorization"
    )
    assert header == "Bearer tok-123"
    _, active = k8s_config.list_kube_config_contexts(str(path))  # type: ignore[no-untyped-call]
    assert active["context"]["namespace"] == "it-ns"
