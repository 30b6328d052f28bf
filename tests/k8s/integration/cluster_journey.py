"""The journey against a real cluster: the whole system as local processes (the devstack's
Stack: NATS, Redis, api, health, gc, provisioner-k8s), a `kubernetes` provider on a real API
server. One proxy pod becomes ready after health's real CONNECT probe, a client leases it,
fetches a page through it, reports, releases (then a lease of it is refused: cooldown, 409),
the delete removes it, and nothing labelled with this installation is left.

Self-contained on purpose: besides the standard library it imports only what the proxyfleet
image (deploy/Dockerfile) has (proxyfleet.*, httpx, kubernetes, certifi), because the Job of
job.yaml runs this file in the cluster from a ConfigMap, where tests/ does not exist:
    python cluster_journey.py   (settings from the environment, see `from_env`)
It prints one line `JOURNEY {json}` with the figures and exits 0, or 1 after a traceback."""

from __future__ import annotations

import json
import os
import secrets
import ssl
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import certifi
import httpx
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from proxyfleet.devstack.commands import service_bin
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack

T = TypeVar("T")
PROVIDER = "cluster"
LOCAL_TARGET = "local"
"""`target` value: the stack's own HTTPS target, on `target_host` (the Job pod's IP)."""
INSTALLATION_LABEL = "proxyfleet.io/installation"


@dataclass(frozen=True)
class JourneySettings:
    namespace: str
    """Where the proxy pods go (the Job's own namespace in the cluster)."""
    installation_id: str
    kubeconfig: str = ""
    """"" = the in-cluster service account (the Job); else a kubeconfig path."""
    context: str = ""
    expose: str = "pod_ip"
    squid_image: str = ""
    """"" = the provider's default image."""
    target: str = LOCAL_TARGET
    """The page fetched through the proxy (and health's probe target): LOCAL_TARGET or an
    https URL the proxy pods can reach."""
    target_host: str = "127.0.0.1"
    """Address of the local target (the pod IP in the Job: proxy pods connect to it)."""
    ready_timeout: float = 300.0
    """Seconds for the pod to be ready (the first run pulls the Squid image)."""
    base_dir: str = ""
    """Folder for the stack's files ("" = a fresh temporary one)."""


def from_env(env: dict[str, str]) -> JourneySettings:
    """Settings of the Job (job.yaml sets these) or of a direct run (the test sets them)."""
    return JourneySettings(
        namespace=env["PROXYFLEET_K8S_NAMESPACE"],
        installation_id=env["PROXYFLEET_K8S_INSTALLATION"],
        kubeconfig=env.get("PROXYFLEET_K8S_KUBECONFIG", ""),
        context=env.get("PROXYFLEET_K8S_CONTEXT", ""),
        expose=env.get("PROXYFLEET_K8S_EXPOSE", "pod_ip"),
        squid_image=env.get("PROXYFLEET_K8S_SQUID_IMAGE", ""),
        target=env.get("PROXYFLEET_K8S_TARGET", LOCAL_TARGET),
        target_host=env.get("PROXYFLEET_K8S_TARGET_HOST", "127.0.0.1"),
        ready_timeout=float(env.get("PROXYFLEET_K8S_READY_TIMEOUT", "300")),
    )


def provider_yaml(s: JourneySettings, target_port: int) -> str:
    image = f"      image: {s.squid_image}\n" if s.squid_image else ""
    # The local target is on a pod IP, a private address Squid refuses by default.
    private = "false" if s.target == LOCAL_TARGET else "true"
    return (
        f"  - name: {PROVIDER}\n"
        "    type: kubernetes\n"
        "    zones: [default]\n"
        f"    boot_timeout: {s.ready_timeout}\n"
        "    kubernetes:\n"
        f"      namespace: {s.namespace}\n"
        f'      kubeconfig: "{s.kubeconfig}"\n'
        f'      context: "{s.context}"\n'
        f"      expose: {s.expose}\n"
        f"{image}"
        f"      connect_ports: [443, {target_port}]\n"
        f"      deny_private_destinations: {private}\n"
    )


def stack_options(s: JourneySettings, base: Path) -> StackOptions:
    target_port = free_port()
    metrics_port = free_port()
    probe: list[str] = []
    if s.target != LOCAL_TARGET:
        probe = ["--target", s.target, "--ca-file", certifi.where()]
    return StackOptions.on_free_ports(
        base_dir=base,
        health_interval=2.0,
        gc_interval=5.0,
        gc_min_age=120.0,
        cooldown=5.0,
        boot_timeout=s.ready_timeout,
        installation_id=s.installation_id,
        target_host=s.target_host,
        target_port=target_port,
        extra_providers=provider_yaml(s, target_port),
        extra_services={
            "provisioner-k8s": [
                service_bin("proxyfleet-provisioner-k8s"),
                "--provider",
                PROVIDER,
                "--metrics-port",
                str(metrics_port),
            ]
        },
        extra_args={"health": probe} if probe else {},
        echo=None,
    )


def wait_for(what: str, check: Callable[[], T | None], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def api_client(kubeconfig: str, context: str) -> k8s.ApiClient:
    """A client of its own: from the kubeconfig file, or in-cluster when it is ""."""
    cfg = k8s.Configuration()
    if kubeconfig:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context or None, client_configuration=cfg
        )
    else:
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return k8s.ApiClient(cfg)


def core_api(s: JourneySettings) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client(s.kubeconfig, s.context))


def left_over(core: k8s.CoreV1Api, s: JourneySettings) -> dict[str, list[str]]:
    """Objects of this installation still in the namespace, by kind."""
    selector = f"{INSTALLATION_LABEL}={s.installation_id}"
    ns = s.namespace
    found: dict[str, list[Any]] = {
        "pods": core.list_namespaced_pod(ns, label_selector=selector).items,
        "secrets": core.list_namespaced_secret(ns, label_selector=selector).items,
        "configmaps": core.list_namespaced_config_map(ns, label_selector=selector).items,
        "services": core.list_namespaced_service(ns, label_selector=selector).items,
    }
    return {
        kind: [str(o.metadata.name) for o in items if o.metadata is not None]
        for kind, items in found.items()
        if items
    }


def run_journey(s: JourneySettings) -> dict[str, Any]:
    """The journey; its figures. Raises AssertionError on a step that went wrong."""
    base = Path(s.base_dir or tempfile.mkdtemp(prefix="proxyfleet-it-k8s-"))
    base.chmod(0o711)
    stack = Stack(stack_options(s, base))
    core = core_api(s)
    try:
        stack.start()
        return _journey(stack, core, s)
    finally:
        stack.stop()
        for log in sorted((base / "logs").glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-20:]
            print(f"---- {log.name} (last lines)\n" + "\n".join(tail), flush=True)


def _journey(stack: Stack, core: k8s.CoreV1Api, s: JourneySettings) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {stack.admin_token}"}
    admin = httpx.Client(base_url=stack.api_url, headers=auth, timeout=30)
    auth = {"Authorization": f"Bearer {stack.client_token}"}
    client = httpx.Client(base_url=stack.api_url, headers=auth, timeout=30)

    def phase(pid: str) -> str:
        return str(admin.get(f"/v1/proxies/{pid}").json()["phase"])

    started = time.monotonic()
    r = admin.post("/v1/proxies", json={"provider": PROVIDER, "count": 1})
    assert r.status_code == 202, r.text
    [proxy_id] = [p["id"] for p in r.json()["items"]]
    wait_for("the proxy ready", lambda: phase(proxy_id) in ("ready", "failed"), s.ready_timeout)
    assert phase(proxy_id) == "ready", admin.get(f"/v1/proxies/{proxy_id}").text
    ready_s = time.monotonic() - started

    r = client.post("/v1/leases", json={"ttl": 120, "holder": "it-k8s"})
    assert r.status_code == 201, r.text
    lease = r.json()
    assert lease["proxy"]["id"] == proxy_id
    target = stack.target_url if s.target == LOCAL_TARGET else s.target
    cafile = stack.ca_file if s.target == LOCAL_TARGET else certifi.where()
    ctx = ssl.create_default_context(cafile=cafile)
    with httpx.Client(proxy=lease["proxy"]["url"], verify=ctx, timeout=30) as via:
        page = via.get(target)
    assert page.status_code < 400, page.status_code
    lease_url = f"/v1/leases/{lease['lease_id']}"
    r = client.post(f"{lease_url}/report", json={"epoch": lease["epoch"], "outcome": "ok"})
    assert r.status_code == 200, r.text
    r = client.post(f"{lease_url}/release", json={"epoch": lease["epoch"]})
    assert r.status_code == 200, r.text
    r = client.post("/v1/leases", json={"proxy_id": proxy_id})
    assert r.status_code == 409, r.text
    assert "cool" in r.json()["message"], r.text

    r = admin.delete(f"/v1/proxies/{proxy_id}")
    assert r.status_code in (200, 202), r.text
    wait_for("the proxy deleted", lambda: phase(proxy_id) == "deleted", 300)
    wait_for("nothing left in the namespace", lambda: not left_over(core, s), 300)
    return {
        "proxy_id": proxy_id,
        "host": lease["proxy"]["host"],
        "ready_s": round(ready_s, 1),
        "journey_s": round(time.monotonic() - started, 1),
        "page_status": page.status_code,
    }


def main() -> int:
    settings = from_env(dict(os.environ))
    print(f"journey settings: {json.dumps(asdict(settings))}", flush=True)
    try:
        figures = run_journey(settings)
    except Exception:  # the Job's log says why, its exit code that it failed
        traceback.print_exc()
        return 1
    print(f"JOURNEY {json.dumps(figures)}", flush=True)
    return 0


def new_installation_id() -> str:
    return f"it-k8s-{secrets.token_hex(3)}"


if __name__ == "__main__":
    sys.exit(main())
