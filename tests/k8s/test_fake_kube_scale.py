"""Many pods at once: the kubelet starts them concurrently, each with a real Squid."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import TargetServer
from tests.k8s.conftest import (
    NAMESPACE,
    PASSWORD,
    USER,
    Core,
    condition,
    connect_status,
    create_proxy,
    wait_for,
)
from tests.k8s.fake_kube import FakeKube

PODS = 100


def test_a_hundred_pods_created_at_once_all_become_ready(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    started = time.monotonic()
    ids = [f"s{i:03d}" for i in range(PODS)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: create_proxy(core_v1, i, target), ids))
    created = time.monotonic() - started

    def all_ready() -> list[str] | None:
        pods = core_v1.list_namespaced_pod(
            NAMESPACE, label_selector="app.kubernetes.io/managed-by=proxyfleet"
        )
        ready = [p.status.pod_ip for p in pods.items if condition(p, "Ready") == "True"]
        return ready if len(ready) == PODS else None

    ips = wait_for(all_ready, within=30, what=f"{PODS} pods Ready")
    took = time.monotonic() - started
    print(
        f"\n{PODS} pods: created in {created:.1f} s, all Ready {took:.1f} s after the first create"
    )
    assert len(set(ips)) == PODS
    assert len(fake_kube.kubelet.running()) == PODS
    assert connect_status(ips[0], 3128, target.port, (USER, PASSWORD)) == 200
    assert connect_status(ips[-1], 3128, target.port, (USER, PASSWORD)) == 200


def test_a_hundred_pods_deleted_at_once_leave_nothing(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    ids = [f"d{i:03d}" for i in range(PODS)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: create_proxy(core_v1, i, target), ids))
    wait_for(lambda: len(fake_kube.kubelet.running()) == PODS, within=30, what="all running")
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: core_v1.delete_namespaced_pod(f"pf-{i}", NAMESPACE), ids))

    def nothing_left() -> bool:
        return not any(fake_kube.objects(r) for r in ("pods", "secrets", "configmaps"))

    wait_for(nothing_left, within=30, what="every object gone")
    took = time.monotonic() - started
    print(f"\n{PODS} pods deleted: every pod, secret and configmap gone in {took:.1f} s")
    assert fake_kube.kubelet.running() == {}
