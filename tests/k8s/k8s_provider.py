"""Building the Kubernetes adapter for the tests here (against the fake API server of
tests/k8s/fake_kube, through a kubeconfig file: the real config-loading path)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
from kubernetes import client

from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.pure.config import K8sSettings
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


def kubeconfig_for(fake: Any, tmp_path: Path) -> Path:
    """A kubeconfig file for the fake API server (a new name per call)."""
    return Path(fake.write_kubeconfig(tmp_path / f"kubeconfig-{secrets.token_hex(3)}",
                                      namespace=NAMESPACE))  # fmt: skip


@contextlib.asynccontextmanager
async def opened(
    fake: Any, tmp_path: Path, installation_id: str, **overrides: Any
) -> AsyncIterator[K8sProvider]:
    provider = provider_for(kubeconfig_for(fake, tmp_path), installation_id, **overrides)
    try:
        yield provider
    finally:
        await provider.close()


async def fetch_through(host: str, port: int, auth: tuple[str, str] | None, target: Any) -> int:
    """The status of GET target.url through the proxy: a real CONNECT (authenticated when
    `auth` is given), then TLS to the loopback target. 407 when the proxy refuses."""
    userinfo = f"{auth[0]}:{auth[1]}@" if auth else ""
    tls = ssl.create_default_context(cafile=target.ca_file)
    async with httpx.AsyncClient(proxy=f"http://{userinfo}{host}:{port}", verify=tls,
                                 timeout=10.0) as client:  # fmt: skip
        try:
            return (await client.get(target.url)).status_code
        except httpx.ProxyError as exc:
            if "407" in str(exc):
                return 407
            raise


async def eventually(check: Callable[[], Any], within: float = 10.0) -> None:
    """Wait until `check()` is truthy (bounded in time); AssertionError after `within`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"not true within {within:g} s: {check}")
        await asyncio.sleep(0.05)


def live(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Objects not being deleted."""
    return [o for o in objects if not o.get("metadata", {}).get("deletionTimestamp")]


async def until_ready(provider: K8sProvider, proxy_id: str, within: float = 30.0) -> None:
    """Wait until the pod watch reports the proxy's pod Ready (Squid accepts connections;
    create returns earlier, as soon as the pod has its IP)."""
    name = f"pf-{proxy_id}"

    def ready() -> bool:
        state = provider.pods.get(name)
        return state is not None and state.ready

    await eventually(ready, within)


def create_directly(fake: Any, resource: str, manifest: dict[str, Any]) -> None:
    """Make an object in the fake through the real client, as someone else would."""
    api = client.ApiClient(fake.configuration())
    core = client.CoreV1Api(api)
    calls: dict[str, tuple[Any, Any]] = {
        "pods": (core.create_namespaced_pod, client.V1Pod),
        "secrets": (core.create_namespaced_secret, client.V1Secret),
        "configmaps": (core.create_namespaced_config_map, client.V1ConfigMap),
        "services": (core.create_namespaced_service, client.V1Service),
    }
    create, model = calls[resource]
    try:
        create(NAMESPACE, model.from_dict(manifest))
    finally:
        api.close()  # type: ignore[no-untyped-call]
