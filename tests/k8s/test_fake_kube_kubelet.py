"""The fake's kubelet runs pods for real: a Squid from the pod's ConfigMap and Secret on a
loopback pod IP, reachable with the htpasswd credentials; statuses for failures."""

from __future__ import annotations

import os
import ssl

import httpx
import pytest
from tests.conftest import TargetServer
from tests.k8s.conftest import (
    NAMESPACE,
    PASSWORD,
    USER,
    Core,
    connect_status,
    create_proxy,
    wait_for,
    wait_ready,
)
from tests.k8s.fake_kube import FakeKube


def test_a_squid_pod_runs_on_its_ip_with_its_secret_and_stops_when_deleted(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    create_proxy(core_v1, "p1", target)
    pod = wait_ready(core_v1, "pf-p1")
    ip = pod.status.pod_ip
    assert ip.startswith("127.")
    assert ip != "127.0.0.1"
    assert ip == fake_kube.pod_address(NAMESPACE, "pf-p1")
    assert pod.status.phase == "Running"
    assert pod.status.host_ip == "127.0.0.1"
    [cs] = pod.status.container_statuses
    assert cs.ready
    assert cs.started
    assert cs.state.running is not None
    assert cs.restart_count == 0

    assert connect_status(ip, 3128, target.port, (USER, PASSWORD)) == 200
    assert connect_status(ip, 3128, target.port, (USER, "wrong")) == 407
    assert connect_status(ip, 3128, target.port, None) == 407
    tls = ssl.create_default_context(cafile=target.ca_file)
    with httpx.Client(proxy=f"http://{USER}:{PASSWORD}@{ip}:3128", verify=tls, timeout=10) as http:
        assert http.get(target.url).status_code == 200

    pid = fake_kube.kubelet.running()[(NAMESPACE, "pf-p1")]
    core_v1.delete_namespaced_pod("pf-p1", NAMESPACE)
    wait_for(lambda: not fake_kube.objects("pods"), what="the pod gone")
    wait_for(
        lambda: not fake_kube.objects("secrets") and not fake_kube.objects("configmaps"),
        what="its objects gone",
    )
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
