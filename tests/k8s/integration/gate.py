"""When and how the opt-in real-cluster test runs, decided from the environment. Pure: the
test module asks `skip_reason` at collection and `plan` in the test, and tests/k8s/
integration/test_gate.py checks both without a cluster."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENABLE = "PROXYFLEET_INTEGRATION_K8S"
MODES = ("job", "direct")
EXPOSES = ("pod_ip", "node_port", "load_balancer")
PUBLIC_TARGET = "https://www.gstatic.com/generate_204"
"""Direct mode's default page: the proxy pods cannot reach this machine's loopback."""


def skip_reason(env: Mapping[str, str]) -> str | None:
    """Why the test does not run here, or None when it is asked for."""
    if env.get(ENABLE) == "1":
        return None
    return (
        f"opt-in: needs a real cluster; run `make test-integration-k8s` (sets {ENABLE}=1) "
        "with KUBECONFIG pointing at it (a kind cluster works: docs/kubernetes-provider.md)"
    )


@dataclass(frozen=True)
class Plan:
    mode: str
    """job: the journey runs in the cluster as a Job (pod IPs unreachable from here);
    direct: it runs here (pod IPs routable from this machine, or node_port/load_balancer)."""
    kubeconfig: str
    context: str
    namespace: str
    image: str
    """The proxyfleet image (deploy/Dockerfile) the Job runs."""
    expose: str
    squid_image: str
    target: str
    target_host: str


def plan(env: Mapping[str, str]) -> Plan:
    """The run asked for; ValueError saying what to set when it cannot be made."""
    kubeconfig = env.get("KUBECONFIG", "").split(os.pathsep)[0]
    if not kubeconfig:
        default = Path(env.get("HOME", "~")).expanduser() / ".kube" / "config"
        kubeconfig = str(default) if default.exists() else ""
    if not kubeconfig:
        raise ValueError("set KUBECONFIG to the cluster's kubeconfig (kind: `kind get kubeconfig`)")
    mode = env.get("PROXYFLEET_K8S_MODE", "job")
    if mode not in MODES:
        raise ValueError(f"PROXYFLEET_K8S_MODE: expected one of {', '.join(MODES)}, got {mode!r}")
    expose = env.get("PROXYFLEET_K8S_EXPOSE", "pod_ip")
    if expose not in EXPOSES:
        raise ValueError(
            f"PROXYFLEET_K8S_EXPOSE: expected one of {', '.join(EXPOSES)}, got {expose!r}"
        )
    default_target = "local" if mode == "job" else PUBLIC_TARGET
    target = env.get("PROXYFLEET_K8S_TARGET", default_target)
    target_host = env.get("PROXYFLEET_K8S_TARGET_HOST", "")
    if mode == "direct" and target == "local" and not target_host:
        raise ValueError(
            "PROXYFLEET_K8S_TARGET=local in direct mode needs PROXYFLEET_K8S_TARGET_HOST: "
            "an address of this machine the proxy pods reach"
        )
    return Plan(
        mode=mode,
        kubeconfig=kubeconfig,
        context=env.get("PROXYFLEET_K8S_CONTEXT", ""),
        namespace=env.get("PROXYFLEET_K8S_NAMESPACE", "proxyfleet-it"),
        image=env.get("PROXYFLEET_K8S_IMAGE", "proxyfleet:dev"),
        expose=expose,
        squid_image=env.get("PROXYFLEET_K8S_SQUID_IMAGE", ""),
        target=target,
        target_host=target_host or "127.0.0.1",
    )
