"""Failures against the fake API server: API errors classified (429 with Retry-After and
5xx temporary; 403 quota and 422 permanent with the API's message), pods that fail for
good (each reason named), and a pod watch that is dropped or expired mid-create."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.common.factories import make_proxy
from tests.contract.provider_contract import new_proxy_id
from tests.k8s.fake_kube import PodMode
from tests.k8s.k8s_provider import NAMESPACE, eventually, of_proxy, opened, provider_for, spec_for

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import (
    ConfigError,
    PermanentProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.provisioner_k8s.pure import names
from proxyfleet.provisioner_k8s.watcher import PodFailureWatcher

INSTALLATION = "k8s-faults"


async def test_429_is_temporary_with_the_servers_retry_after(
    fake_kube: Any, tmp_path: Path
) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        fake_kube.inject(429, verb="create", resource="pods", retry_after=7, message="slow down")
        with pytest.raises(TemporaryProviderError, match="slow down") as caught:
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))
        assert caught.value.retry_after == 7


@pytest.mark.parametrize("status", [500, 503, 504])
async def test_5xx_is_temporary(fake_kube: Any, tmp_path: Path, status: int) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        fake_kube.inject(status, verb="create", resource="pods", message="apiserver trouble")
        with pytest.raises(TemporaryProviderError, match="apiserver trouble"):
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))


async def test_an_exceeded_resource_quota_is_permanent_and_named(
    fake_kube: Any, tmp_path: Path
) -> None:
    fake_kube.quota(NAMESPACE, pods=1)
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        await provider.create(spec_for(new_proxy_id(), INSTALLATION))
        with pytest.raises(
            PermanentProviderError, match=r"ResourceQuota exceeded: .*exceeded quota"
        ):
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))


async def test_403_and_422_are_permanent_with_the_apis_message(
    fake_kube: Any, tmp_path: Path
) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        forbidden = 'pods is forbidden: User "x" cannot create resource "pods"'
        fake_kube.inject(403, verb="create", resource="pods", message=forbidden)
        with pytest.raises(PermanentProviderError, match='cannot create resource "pods"'):
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))
        invalid = 'Secret "pf-x" is invalid: data[htpasswd]: Invalid value'
        fake_kube.inject(422, verb="create", resource="secrets", message=invalid)
        with pytest.raises(PermanentProviderError, match=r"is invalid: data\[htpasswd\]"):
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))


async def test_an_unreachable_api_server_is_temporary(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u, namespace: proxies}}]\n"
    )
    provider = provider_for(kubeconfig, INSTALLATION)
    try:
        with pytest.raises(TemporaryProviderError, match="no answer"):
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))
    finally:
        await provider.close()


def test_no_cluster_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot load the in-cluster config"):
        provider_for("", INSTALLATION)
    with pytest.raises(ConfigError, match="cannot load the kubeconfig"):
        provider_for(tmp_path / "missing", INSTALLATION)


async def _booting(registry: ProxyRegistry, clock: ManualClock, proxy_id: str, rid: str) -> None:
    assert await registry.create(make_proxy(proxy_id, clock, provider="cluster", zone="default"))
    await registry.transition(proxy_id, Phase.PROVISIONING)
    await registry.transition(proxy_id, Phase.BOOTING, host="127.0.0.9", port=3128, resource_id=rid)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        # A real kubelet reports ErrImagePull first, then ImagePullBackOff.
        (PodMode.IMAGE_PULL_BACKOFF, "ImagePullBackOff|ErrImagePull"),
        (PodMode.ERR_IMAGE_PULL, "ErrImagePull"),
        (PodMode.CRASH_LOOP, "CrashLoopBackOff"),
        (PodMode.OOM_KILLED, "OOMKilled"),
    ],
)
async def test_a_pod_that_fails_for_good_fails_its_proxy_with_the_reason(
    fake_kube: Any,
    tmp_path: Path,
    registry: ProxyRegistry,
    clock: ManualClock,
    mode: Any,
    reason: str,
) -> None:
    """The pod has its IP before the kubelet knows the image or Squid is bad (as in a real
    cluster): the create either sees the failure while it waits and fails for good, or
    returns the IP and the failure watcher fails the booting proxy."""
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        fake_kube.kubelet.set_mode(mode, proxy_id=spec.proxy_id)
        failure: PermanentProviderError | None = None
        try:
            done = await provider.create(spec)
        except PermanentProviderError as exc:
            failure = exc
        if failure is not None:
            assert re.search(reason, str(failure)), failure
            return
        await _booting(registry, clock, spec.proxy_id, done.resource_id)
        name = names.object_name(spec.proxy_id)
        await eventually(lambda: bool((s := provider.pods.get(name)) and s.failure), 30.0)
        watcher = PodFailureWatcher(provider, registry, "cluster", interval=60.0)
        assert await watcher.check_once() == 1
        failed = await registry.get(spec.proxy_id)
        assert failed is not None
        assert failed.phase is Phase.FAILED
        assert re.search(reason, failed.reason), failed.reason


@pytest.mark.parametrize("how", ["evict", "oom", "deleted"])
async def test_a_running_proxy_whose_pod_fails_is_failed_with_the_reason(
    fake_kube: Any, tmp_path: Path, registry: ProxyRegistry, clock: ManualClock, how: str
) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        spec, kept = (spec_for(new_proxy_id(), INSTALLATION) for _ in range(2))
        done, other = await provider.create(spec), await provider.create(kept)
        await _booting(registry, clock, spec.proxy_id, done.resource_id)
        await _booting(registry, clock, kept.proxy_id, other.resource_id)
        watcher = PodFailureWatcher(provider, registry, "cluster", interval=60.0)
        assert await watcher.check_once() == 0
        name = names.object_name(spec.proxy_id)
        if how == "evict":
            fake_kube.kubelet.evict(NAMESPACE, name)
        elif how == "oom":
            fake_kube.kubelet.oom(NAMESPACE, name)
        else:
            await provider.objects.delete("pods", name)
        # After an OOM kill the restarted container may crash-loop (the fake's Squid under
        # a loaded suite): the first reason the watch saw is kept, either one fails it.
        expected = {"evict": "Evicted", "oom": "OOMKilled|CrashLoopBackOff",
                    "deleted": "pod gone"}[how]  # fmt: skip

        def noticed() -> bool:
            state = provider.pods.get(name)
            if how == "deleted":
                return state is None or state.deleting
            return bool(state and state.failure)

        await eventually(noticed, within=30.0)
        assert await watcher.check_once() == 1
        failed = await registry.get(spec.proxy_id)
        assert failed is not None
        assert failed.phase is Phase.FAILED
        assert re.search(expected, failed.reason), failed.reason
        still = await registry.get(kept.proxy_id)
        assert still is not None
        assert still.phase is Phase.BOOTING


def _restarts(reason: str) -> float:
    return (
        REGISTRY.get_sample_value("proxyfleet_k8s_watch_restarts_total", {"reason": reason}) or 0.0
    )


@pytest.mark.parametrize("fault", ["dropped", "gone"])
async def test_a_watch_dropped_or_expired_mid_create_still_returns_the_pod_ip(
    fake_kube: Any, tmp_path: Path, fault: str
) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        await provider.list_managed()
        await provider.pods.start(10.0)  # the watch is open before the create
        fake_kube.kubelet.start_delay = 1.0
        specs = [spec_for(new_proxy_id(), INSTALLATION) for _ in range(3)]
        creates = [asyncio.create_task(provider.create(s)) for s in specs]
        await eventually(lambda: all(
            of_proxy(fake_kube.objects("pods", NAMESPACE), s.proxy_id) for s in specs))  # fmt: skip
        gone_before = _restarts("gone")
        if fault == "gone":
            fake_kube.compact()
        fake_kube.drop_watches()
        done = await asyncio.wait_for(asyncio.gather(*creates), 30.0)
        for spec, provisioned in zip(specs, done, strict=True):
            name = names.object_name(spec.proxy_id)
            assert provisioned.host == fake_kube.pod_address(NAMESPACE, name)
        if fault == "gone":
            assert _restarts("gone") > gone_before
