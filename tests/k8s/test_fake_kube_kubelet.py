"""The fake's kubelet runs pods for real: a Squid from the pod's ConfigMap and Secret on a
loopback pod IP, reachable with the htpasswd credentials; statuses for failures."""

from __future__ import annotations

import os
import ssl
from typing import Any

import httpx
import pytest
from kubernetes.client.exceptions import ApiException
from tests.conftest import TargetServer
from tests.k8s.conftest import (
    NAMESPACE,
    PASSWORD,
    USER,
    Core,
    condition,
    connect_status,
    create_proxy,
    new_watch,
    status_body,
    to_json,
    wait_for,
    wait_ready,
)
from tests.k8s.fake_kube import FakeKube, PodMode, manifests


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


def _container_status(core_v1: Core, name: str) -> Any:
    statuses = core_v1.read_namespaced_pod(name, NAMESPACE).status.container_statuses
    return statuses[0] if statuses else None


def test_a_pod_waits_for_its_volumes_without_an_ip(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    core_v1.create_namespaced_pod(NAMESPACE, manifests.squid_pod("late"))
    waiting = wait_for(lambda: _container_status(core_v1, "pf-late"), what="a container status")
    assert waiting.state.waiting.reason == "ContainerCreating"
    pod = core_v1.read_namespaced_pod("pf-late", NAMESPACE)
    assert pod.status.phase == "Pending"
    assert pod.status.pod_ip is None
    owner = to_json(pod)
    core_v1.create_namespaced_config_map(
        NAMESPACE, manifests.squid_config_map("late", owner, connect_ports=[target.port])
    )
    core_v1.create_namespaced_secret(
        NAMESPACE, manifests.htpasswd_secret("late", USER, PASSWORD, owner)
    )
    ready = wait_ready(core_v1, "pf-late")
    assert connect_status(ready.status.pod_ip, 3128, target.port, (USER, PASSWORD)) == 200


@pytest.mark.parametrize("mode", [PodMode.IMAGE_PULL_BACKOFF, PodMode.ERR_IMAGE_PULL])
def test_image_pull_failures_stay_pending(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer, mode: PodMode
) -> None:
    fake_kube.kubelet.set_mode(mode, proxy_id="img")
    create_proxy(core_v1, "img", target)
    first = wait_for(
        lambda: (
            (s := _container_status(core_v1, "pf-img"))
            and s.state.waiting
            and s.state.waiting.reason == "ErrImagePull"
            and s
        ),
        what="ErrImagePull",
    )
    assert "failed to pull and unpack image" in first.state.waiting.message
    if mode is PodMode.IMAGE_PULL_BACKOFF:
        wait_for(
            lambda: _container_status(core_v1, "pf-img").state.waiting.reason == "ImagePullBackOff",
            what="ImagePullBackOff",
        )
    pod = core_v1.read_namespaced_pod("pf-img", NAMESPACE)
    assert pod.status.phase == "Pending"
    assert condition(pod, "Ready") == "False"
    assert fake_kube.kubelet.running() == {}


def test_a_crash_looping_container_backs_off(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    fake_kube.kubelet.set_mode(PodMode.CRASH_LOOP)
    create_proxy(core_v1, "loop", target)
    looping = wait_for(
        lambda: (
            (s := _container_status(core_v1, "pf-loop"))
            and s.state.waiting
            and s.state.waiting.reason == "CrashLoopBackOff"
            and s
        ),
        what="CrashLoopBackOff",
    )
    assert looping.restart_count >= 2
    assert looping.last_state.terminated.reason == "Error"
    assert looping.last_state.terminated.exit_code == 1
    pod = core_v1.read_namespaced_pod("pf-loop", NAMESPACE)
    assert pod.status.phase == "Running"
    assert condition(pod, "Ready") == "False"


def test_an_oom_killed_container_says_so(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    fake_kube.kubelet.set_mode(PodMode.OOM_KILLED, proxy_id="oom")
    create_proxy(core_v1, "oom", target)
    killed = wait_for(
        lambda: (s := _container_status(core_v1, "pf-oom")) and s.restart_count >= 1 and s,
        what="a restart",
    )
    assert killed.last_state.terminated.reason == "OOMKilled"
    assert killed.last_state.terminated.exit_code == 137


def test_crash_and_oom_of_a_running_squid_restart_it(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    create_proxy(core_v1, "re", target)
    wait_ready(core_v1, "pf-re")
    first_pid = fake_kube.kubelet.running()[(NAMESPACE, "pf-re")]
    fake_kube.kubelet.crash(NAMESPACE, "pf-re")
    wait_for(lambda: _container_status(core_v1, "pf-re").restart_count == 1, what="one restart")
    pod = wait_ready(core_v1, "pf-re")
    [cs] = pod.status.container_statuses
    assert cs.last_state.terminated.reason == "Error"
    assert cs.last_state.terminated.exit_code == 137
    second_pid = fake_kube.kubelet.running()[(NAMESPACE, "pf-re")]
    assert second_pid != first_pid
    assert connect_status(pod.status.pod_ip, 3128, target.port, (USER, PASSWORD)) == 200
    fake_kube.kubelet.oom(NAMESPACE, "pf-re")
    wait_for(
        lambda: _container_status(core_v1, "pf-re").restart_count == 2, what="a second restart"
    )
    cs = _container_status(core_v1, "pf-re")
    assert cs.last_state.terminated.reason == "OOMKilled"
    assert cs.last_state.terminated.exit_code == 137


def test_an_evicted_pod_fails_and_its_squid_stops(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    create_proxy(core_v1, "ev", target)
    ip = wait_ready(core_v1, "pf-ev").status.pod_ip
    pid = fake_kube.kubelet.running()[(NAMESPACE, "pf-ev")]
    fake_kube.kubelet.evict(NAMESPACE, "pf-ev")
    pod = wait_for(
        lambda: (
            (p := core_v1.read_namespaced_pod("pf-ev", NAMESPACE)).status.phase == "Failed" and p
        ),
        what="Failed",
    )
    assert pod.status.reason == "Evicted"
    assert pod.status.message.startswith("The node was low on resource: memory.")
    assert condition(pod, "Ready") == "False"
    assert condition(pod, "DisruptionTarget") == "True"
    assert (NAMESPACE, "pf-ev") not in fake_kube.kubelet.running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(ConnectionRefusedError):
        connect_status(ip, 3128, target.port, (USER, PASSWORD))
    core_v1.delete_namespaced_pod("pf-ev", NAMESPACE)  # a failed pod goes at once
    assert fake_kube.objects("pods") == []


def test_restart_policy_never_leaves_a_crashed_pod_failed(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    body = manifests.squid_pod("never")
    body["spec"]["restartPolicy"] = "Never"
    pod = core_v1.create_namespaced_pod(NAMESPACE, body)
    owner = to_json(pod)
    core_v1.create_namespaced_config_map(
        NAMESPACE, manifests.squid_config_map("never", owner, connect_ports=[target.port])
    )
    core_v1.create_namespaced_secret(
        NAMESPACE, manifests.htpasswd_secret("never", USER, PASSWORD, owner)
    )
    wait_ready(core_v1, "pf-never")
    fake_kube.kubelet.crash(NAMESPACE, "pf-never")
    failed = wait_for(
        lambda: (
            (p := core_v1.read_namespaced_pod("pf-never", NAMESPACE)).status.phase == "Failed" and p
        ),
        what="Failed",
    )
    [cs] = failed.status.container_statuses
    assert cs.state.terminated.exit_code == 137
    assert cs.restart_count == 0


def test_a_squid_that_cannot_start_crash_loops_with_its_log(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    pod = core_v1.create_namespaced_pod(NAMESPACE, manifests.squid_pod("bad"))
    owner = to_json(pod)
    conf = manifests.squid_config_map("bad", owner, connect_ports=[target.port])
    conf["data"]["squid.conf"] += "this_is_no_directive at all\n"
    core_v1.create_namespaced_config_map(NAMESPACE, conf)
    core_v1.create_namespaced_secret(
        NAMESPACE, manifests.htpasswd_secret("bad", USER, PASSWORD, owner)
    )
    looping = wait_for(
        lambda: (
            (s := _container_status(core_v1, "pf-bad"))
            and s.state.waiting
            and s.state.waiting.reason == "CrashLoopBackOff"
            and s
        ),
        what="CrashLoopBackOff",
    )
    assert looping.last_state.terminated.exit_code != 0
    assert looping.last_state.terminated.reason == "Error"


def test_a_pods_log_is_its_squids_and_waits_for_it_to_start(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    core_v1.create_namespaced_pod(NAMESPACE, manifests.squid_pod("log"))
    with pytest.raises(ApiException) as exc:
        core_v1.read_namespaced_pod_log("pf-log", NAMESPACE)
    assert exc.value.status == 400
    assert "is waiting to start: ContainerCreating" in status_body(exc.value)["message"]
    owner = to_json(core_v1.read_namespaced_pod("pf-log", NAMESPACE))
    core_v1.create_namespaced_config_map(
        NAMESPACE, manifests.squid_config_map("log", owner, connect_ports=[target.port])
    )
    core_v1.create_namespaced_secret(
        NAMESPACE, manifests.htpasswd_secret("log", USER, PASSWORD, owner)
    )
    wait_ready(core_v1, "pf-log")
    text = core_v1.read_namespaced_pod_log("pf-log", NAMESPACE)
    assert "Starting Squid Cache" in text
    assert len(core_v1.read_namespaced_pod_log("pf-log", NAMESPACE, tail_lines=2).splitlines()) == 2
    assert ("get", "pods/log") in fake_kube.verbs()


def test_a_pod_watch_sees_the_ip_then_ready(core_v1: Core, target: TargetServer) -> None:
    pod = create_proxy(core_v1, "w", target)
    wait_ready(core_v1, "pf-w")
    stream = new_watch().stream(
        core_v1.list_namespaced_pod,
        NAMESPACE,
        label_selector="proxyfleet.io/proxy-id=w",
        resource_version=pod.metadata.resource_version,
        timeout_seconds=1,
    )
    seen = [(e["type"], e["object"].status.pod_ip, condition(e["object"], "Ready")) for e in stream]
    assert {t for t, _, _ in seen} == {"MODIFIED"}
    first_ip = next(i for i, (_, ip, _) in enumerate(seen) if ip)
    first_ready = next(i for i, (_, _, ready) in enumerate(seen) if ready == "True")
    assert first_ip <= first_ready
    assert seen[-1][1].startswith("127.")
