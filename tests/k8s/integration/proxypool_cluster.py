"""The opt-in real-cluster test's ProxyPool step: the CRD of deploy/ installed (unless it is
there), and the pool operator run on this machine with exactly the Role of deploy/ (a
ServiceAccount of the test namespace bound to it, its token from the TokenRequest API in a
kubeconfig of its own), so the run also proves the Role is enough on a real API server.
Everything it made is removed after; a ProxyPool left by a failed run loses its finalizer
first, so the namespace can go."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from proxyfleet.pool_operator import crd

ROLE_FILE = Path(__file__).parents[3] / "deploy" / "kubernetes" / "core" / "pool-operator-role.yaml"
ACCOUNT = "proxyfleet-it-pool-operator"


def rbac_manifests(namespace: str) -> list[dict[str, Any]]:
    """The ServiceAccount, and deploy/'s Role and RoleBinding, in `namespace`."""
    docs = [d for d in yaml.safe_load_all(ROLE_FILE.read_text()) if d]
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": namespace},
        }
    ]
    for doc in docs:
        made = copy.deepcopy(doc)
        made["metadata"]["namespace"] = namespace
        if made["kind"] == "RoleBinding":
            made["subjects"] = [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}]
        out.append(made)
    return out


def token_kubeconfig(cfg: k8s.Configuration, token: str, namespace: str, path: Path) -> Path:
    """A kubeconfig for `cfg`'s API server with a bearer token (and its CA, as a file)."""
    cluster: dict[str, Any] = {"server": cfg.host}
    if not cfg.verify_ssl:
        cluster["insecure-skip-tls-verify"] = True
    elif cfg.ssl_ca_cert:
        cluster["certificate-authority"] = str(cfg.ssl_ca_cert)
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "it", "cluster": cluster}],
        "users": [{"name": ACCOUNT, "user": {"token": token}}],
        "contexts": [
            {"name": "it", "context": {"cluster": "it", "user": ACCOUNT, "namespace": namespace}}
        ],
        "current-context": "it",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@contextmanager
def operator_access(api: k8s.ApiClient, namespace: str, workdir: Path) -> Iterator[Path]:
    """The CRD installed and established, the operator's account bound to the Role; the
    kubeconfig of that account. Undone after."""
    ext: Any = k8s.ApiextensionsV1Api(api)
    rbac: Any = k8s.RbacAuthorizationV1Api(api)
    core: Any = k8s.CoreV1Api(api)
    created_crd = False
    try:
        ext.create_custom_resource_definition(crd.crd())
        created_crd = True
    except ApiException as exc:
        if exc.status != 409:
            raise
    _established(ext)
    account, role, binding = rbac_manifests(namespace)
    _create(core.create_namespaced_service_account, namespace, account)
    _create(rbac.create_namespaced_role, namespace, role)
    _create(rbac.create_namespaced_role_binding, namespace, binding)
    try:
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600}}  # fmt: skip
        token = core.create_namespaced_service_account_token(ACCOUNT, namespace, request)
        yield token_kubeconfig(
            api.configuration, token.status.token, namespace, workdir / "operator-kubeconfig"
        )
    finally:
        release_pools(api, namespace)
        rbac.delete_namespaced_role_binding(binding["metadata"]["name"], namespace)
        rbac.delete_namespaced_role(role["metadata"]["name"], namespace)
        core.delete_namespaced_service_account(ACCOUNT, namespace)
        if created_crd:
            ext.delete_custom_resource_definition(crd.NAME)


def release_pools(api: k8s.ApiClient, namespace: str) -> None:
    """Delete the ProxyPools a failed run left, their finalizers first."""
    custom: Any = k8s.CustomObjectsApi(api)
    args = (crd.GROUP, crd.VERSION, namespace, crd.PLURAL)
    for item in custom.list_namespaced_custom_object(*args)["items"]:
        name = item["metadata"]["name"]
        custom.patch_namespaced_custom_object(*args, name, {"metadata": {"finalizers": None}})
        try:
            custom.delete_namespaced_custom_object(*args, name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def _create(create: Any, namespace: str, body: dict[str, Any]) -> None:
    """Create, or keep what a failed run left."""
    try:
        create(namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def _established(ext: Any, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = ext.read_custom_resource_definition(crd.NAME)
        conditions = {c.type: c.status for c in (found.status.conditions or [])}
        if conditions.get("Established") == "True":
            return
        time.sleep(0.5)
    raise AssertionError(f"the {crd.NAME} CRD was not Established within {within:g} s")
