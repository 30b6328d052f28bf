"""The fake's nodes and scheduler: pods spread over the nodes, a required anti-affinity
(over kubernetes.io/hostname) keeps two selected pods off one node in either direction, two
pods wanting one host port never share a node, and an unschedulable pod waits Pending."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from tests.k8s.conftest import NAMESPACE, wait_for
from tests.k8s.fake_kube import FakeKube

APART = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [{"key": "spread", "operator": "Exists"}]},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def _pod(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox:1", "command": ["sleep", "1d"]}
    if port := spec.pop("host_port", None):
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [container], **spec},
    }


def _make(fake: FakeKube, *pods: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Create the pods through the real client; name -> the pod as the fake stored it."""
    api = client.ApiClient(fake.configuration())
    try:
        core = client.CoreV1Api(api)
        for pod in pods:
            core.create_namespaced_pod(NAMESPACE, client.V1Pod(**_model(pod)))
    finally:
        api.close()  # type: ignore[no-untyped-call]
    return {p["metadata"]["name"]: p for p in fake.objects("pods", NAMESPACE)}


def _model(pod: dict[str, Any]) -> dict[str, Any]:
    return {"api_version": "v1", "kind": "Pod", "metadata": pod["metadata"], "spec": pod["spec"]}


def _scheduled(pod: dict[str, Any]) -> dict[str, Any]:
    [c] = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    return dict(c)


def test_pods_spread_over_the_nodes_each_with_its_own_address(
    fake_kube_factory: Any,
) -> None:
    fake = fake_kube_factory(nodes=3)
    got = _make(fake, *(_pod(f"p{i}", {}) for i in range(6)))
    on = [p["spec"]["nodeName"] for p in got.values()]
    assert sorted(on) == sorted(["fake-node", "fake-node-2", "fake-node-3"] * 2)
    addresses = {fake.node_address(n.name) for n in fake.nodes}
    assert len(addresses) == 3
    assert all(a.startswith("127.") for a in addresses)


def test_required_anti_affinity_keeps_selected_pods_apart_both_ways(
    fake_kube_factory: Any,
) -> None:
    fake = fake_kube_factory(nodes=2)
    got = _make(
        fake,
        _pod("a", {"spread": "1"}, affinity=APART),
        _pod("b", {"spread": "1"}, affinity=APART),
        _pod("c", {"spread": "1"}, affinity=APART),
        # No anti-affinity of its own, but selected by a's and b's: no node for it either.
        _pod("d", {"spread": "1"}),
        _pod("e", {}),  # not selected: goes anywhere
    )
    assert {got["a"]["spec"]["nodeName"], got["b"]["spec"]["nodeName"]} == {
        "fake-node",
        "fake-node-2",
    }
    for name in ("c", "d"):
        assert "nodeName" not in got[name]["spec"]
        reason = _scheduled(got[name])
        assert (reason["status"], reason["reason"]) == ("False", "Unschedulable")
        assert reason["message"] == (
            "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
        )
    assert got["e"]["spec"]["nodeName"]


def test_one_host_port_per_node(fake_kube: FakeKube) -> None:
    got = _make(
        fake_kube, _pod("a", {}, host_port=20001), _pod("b", {}, host_port=20001),
        _pod("c", {}, host_port=20002),
    )  # fmt: skip
    assert got["a"]["spec"]["nodeName"] == got["c"]["spec"]["nodeName"] == "fake-node"
    assert "free ports" in _scheduled(got["b"])["message"]


def test_a_pending_pod_is_bound_when_a_pod_goes(fake_kube_factory: Any) -> None:
    fake = fake_kube_factory(nodes=1)
    _make(fake, _pod("a", {"spread": "1"}, affinity=APART),
          _pod("b", {"spread": "1"}, affinity=APART))  # fmt: skip
    api = client.ApiClient(fake.configuration())
    try:
        core = client.CoreV1Api(api)
        core.delete_namespaced_pod("a", NAMESPACE, grace_period_seconds=0)

        def bound() -> Any:
            pod: Any = core.read_namespaced_pod("b", NAMESPACE)
            return pod if pod.spec.node_name and pod.status.pod_ip else None

        pod = wait_for(bound, what="b bound and running")
    finally:
        api.close()  # type: ignore[no-untyped-call]
    assert pod.spec.node_name == "fake-node"
    assert pod.status.phase == "Running"
