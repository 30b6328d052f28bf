"""Building the Kubernetes adapter for the tests here (against the fake API server of
tests/k8s/fake_kube, through a kubeconfig file: the real config-loading path)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import msgspec

from proxyfleet.common.k8s_config import K8sSettings
from proxyfleet.common.models import ProxySpec
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.settings import Tuning

PROVIDER = "cluster"
NAMESPACE = "proxies"
ZONES = ("default", "eu")
SECRET_PASSWORD_PREFIX = "pw-never-logged-"
FAST = Tuning(request_timeout=10.0, address_timeout=30.0, sweep_interval=0.01, sweep_min_age=60.0)
"""Timings for tests: a create gives up within 30 s, the sweeper runs on every listing."""


def settings_for(kubeconfig: Path | str = "", **overrides: Any) -> K8sSettings:
    values: dict[str, Any] = {
        "namespace": NAMESPACE,
        "kubeconfig": str(kubeconfig),
        "connect_ports": [443],
        "zone_node_labels": {"eu": "europe-west1-b"},
    }
    values.update(overrides)
    return msgspec.convert(values, K8sSettings)


def provider_for(
    kubeconfig: Path | str, installation_id: str, tuning: Tuning = FAST, **overrides: Any
) -> K8sProvider:
    return K8sProvider(
        settings_for(kubeconfig, **overrides), installation_id, PROVIDER, zones=ZONES,
        tuning=tuning,
    )  # fmt: skip


def spec_for(
    proxy_id: str, installation_id: str, zone: str = "default", **placement: str
) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id,
        installation_id=installation_id,
        zone=zone,
        username=f"u{secrets.token_hex(3)}",
        password=SECRET_PASSWORD_PREFIX + secrets.token_hex(8),
        labels={"team": "growth", "purpose": "a b/c"},
        placement=dict(placement),
    )


def of_proxy(objects: list[dict[str, Any]], proxy_id: str) -> list[dict[str, Any]]:
    """The objects labelled with that proxy id."""
    return [
        o for o in objects
        if (o.get("metadata", {}).get("labels") or {}).get("proxyfleet.io/proxy-id") == proxy_id
    ]  # fmt: skip
