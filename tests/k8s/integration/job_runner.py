"""Run cluster_journey.py in the cluster as the Job of job.yaml: apply the provisioner's Role
(deploy/), the Job's ServiceAccount and RoleBinding, the journey as a ConfigMap and the Job;
wait for it; return its log; delete everything it applied."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

HERE = Path(__file__).parent
ROLE_FILE = HERE.parents[2] / "deploy" / "kubernetes" / "k8s" / "role.yaml"
JOB_FILE = HERE / "job.yaml"
JOURNEY_FILE = HERE / "cluster_journey.py"
JOB_NAME = "proxyfleet-it-journey"
CONFIGMAP_NAME = "proxyfleet-it-journey"
M = TypeVar("M")


def role_manifest(namespace: str) -> dict[str, Any]:
    [role] = [d for d in yaml.safe_load_all(ROLE_FILE.read_text()) if d and d["kind"] == "Role"]
    role["metadata"]["namespace"] = namespace
    return dict(role)


def job_manifests(namespace: str, image: str, env: dict[str, str]) -> list[dict[str, Any]]:
    """job.yaml's objects in `namespace`, the Job running `image` with `env` set (names the
    file already sets keep their place; a valueFrom is replaced by the value)."""
    role_name = role_manifest(namespace)["metadata"]["name"]
    docs = [copy.deepcopy(d) for d in yaml.safe_load_all(JOB_FILE.read_text()) if d]
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
        if doc["kind"] == "RoleBinding":
            doc["roleRef"]["name"] = role_name
            for subject in doc["subjects"]:
                subject["namespace"] = namespace
        if doc["kind"] == "Job":
            [container] = doc["spec"]["template"]["spec"]["containers"]
            container["image"] = image
            by_name = {e["name"]: e for e in container["env"]}
            for name, value in env.items():
                by_name[name] = {"name": name, "value": value}
            container["env"] = list(by_name.values())
    return docs


def journey_configmap(namespace: str) -> dict[str, Any]:
    """The ConfigMap job.yaml mounts: the journey, the Job's program."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "proxyfleet-it"}},
        "data": {JOURNEY_FILE.name: JOURNEY_FILE.read_text()},
    }  # fmt: skip


class JobRun:
    def __init__(self, api: k8s.ApiClient, namespace: str) -> None:
        self.core = k8s.CoreV1Api(api)
        self.rbac = k8s.RbacAuthorizationV1Api(api)
        self.batch = k8s.BatchV1Api(api)
        self.ns = namespace

    def apply(self, image: str, env: dict[str, str]) -> None:
        self.delete()  # what a run stopped half-way left
        self.rbac.create_namespaced_role(self.ns, _model(k8s.V1Role, role_manifest(self.ns)))
        configmap = _model(k8s.V1ConfigMap, journey_configmap(self.ns))
        self.core.create_namespaced_config_map(self.ns, configmap)
        for doc in job_manifests(self.ns, image, env):
            if doc["kind"] == "ServiceAccount":
                account = _model(k8s.V1ServiceAccount, doc)
                self.core.create_namespaced_service_account(self.ns, account)
            elif doc["kind"] == "RoleBinding":
                binding = _model(k8s.V1RoleBinding, doc)
                self.rbac.create_namespaced_role_binding(self.ns, binding)
            else:
                self.batch.create_namespaced_job(self.ns, _model(k8s.V1Job, doc))

    def wait(self, timeout: float) -> bool:
        """True when the Job succeeded, False when it failed; TimeoutError past `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.batch.read_namespaced_job_status(JOB_NAME, self.ns).status
            if status is not None and status.succeeded:
                return True
            if status is not None and status.failed:
                return False
            time.sleep(2)
        raise TimeoutError(f"job {JOB_NAME} still running after {timeout:.0f} s")

    def log(self) -> str:
        pods = self.core.list_namespaced_pod(self.ns, label_selector=f"job-name={JOB_NAME}")
        names = [str(p.metadata.name) for p in pods.items if p.metadata is not None]
        return "\n".join(
            f"==== pod {name}\n"
            + self.core.read_namespaced_pod_log(name, self.ns, container="journey")
            for name in names
        )

    def delete(self) -> None:
        deletes: list[Callable[[], object]] = [
            lambda: self.batch.delete_namespaced_job(
                JOB_NAME, self.ns, propagation_policy="Foreground"
            ),
            lambda: self.core.delete_namespaced_config_map(CONFIGMAP_NAME, self.ns),
            lambda: self.rbac.delete_namespaced_role_binding("proxyfleet-it", self.ns),
            lambda: self.core.delete_namespaced_service_account("proxyfleet-it", self.ns),
            lambda: self.rbac.delete_namespaced_role(
                role_manifest(self.ns)["metadata"]["name"], self.ns
            ),
        ]
        for delete in deletes:
            try:
                delete()
            except ApiException as exc:
                if exc.status != 404:
                    raise
        _wait_gone(self.core, self.ns, f"job-name={JOB_NAME}")


def _model(model: type[M], doc: dict[str, Any]) -> M:
    """The client's model of a manifest (API field names, as in the YAML)."""
    made = model.from_dict(doc)  # type: ignore[attr-defined]
    assert made is not None, doc
    return cast(M, made)


def _wait_gone(core: k8s.CoreV1Api, namespace: str, selector: str) -> None:
    """The Job's pod gone, so a next run's `job-name` pod list is its own."""
    deadline = time.monotonic() + 120
    while core.list_namespaced_pod(namespace, label_selector=selector).items:
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods {selector} still there after 120 s")
        time.sleep(1)


def figures(log: str) -> dict[str, Any] | None:
    """The journey's `JOURNEY {json}` line, parsed; None when it did not get that far."""
    for line in reversed(log.splitlines()):
        if line.startswith("JOURNEY "):
            found: dict[str, Any] = json.loads(line.removeprefix("JOURNEY "))
            return found
    return None
