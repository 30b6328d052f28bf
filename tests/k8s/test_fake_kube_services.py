"""Services: ClusterIPs nothing listens on, NodePorts on the node's 127.0.0.1, and
LoadBalancers with a loopback ingress IP, both forwarding to a Ready pod."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.conftest import TargetServer
from tests.k8s.conftest import (
    NAMESPACE,
    PASSWORD,
    USER,
    Core,
    connect_status,
    create_proxy,
    status_body,
    to_json,
    wait_for,
    wait_ready,
)
from tests.k8s.fake_kube import FakeKube


def _service(name: str, kind: str, proxy_id: str, owner: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "type": kind,
            "selector": {"proxyfleet.io/proxy-id": proxy_id},
            "ports": [{"name": "proxy", "port": 3128, "targetPort": "proxy"}],
        },
    }


def test_a_load_balancer_forwards_to_the_pod(
    fake_kube: FakeKube, core_v1: Core, target: TargetServer
) -> None:
    pod = create_proxy(core_v1, "lb", target)
    made = core_v1.create_namespaced_service(
        NAMESPACE, _service("pf-lb", "LoadBalancer", "lb", to_json(pod))
    )
    assert made.spec.cluster_ip.startswith("127.")
    node_port = made.spec.ports[0].node_port
    assert 30000 <= node_port <= 32767
    service = wait_for(
        lambda: (
            (s := core_v1.read_namespaced_service("pf-lb", NAMESPACE)).status.load_balancer.ingress
            and s
        ),
        what="an ingress IP",
    )
    ingress = service.status.load_balancer.ingress[0].ip
    assert ingress.startswith("127.")
    pod_ip = wait_ready(core_v1, "pf-lb").status.pod_ip
    assert ingress != pod_ip
    assert connect_status(ingress, 3128, target.port, (USER, PASSWORD)) == 200
    assert connect_status(ingress, 3128, target.port, (USER, "wrong")) == 407
    assert connect_status("127.0.0.1", node_port, target.port, (USER, PASSWORD)) == 200
    # The service goes with its pod, and so do its listeners.
    core_v1.delete_namespaced_pod("pf-lb", NAMESPACE)
    wait_for(lambda: not fake_kube.objects("services"), what="the service gone")
    wait_for(lambda: _refused(ingress, 3128), what="the load balancer closed")


def _refused(address: str, port: int) -> bool:
    """Refused, reset or closed unanswered (a listener with no endpoint accepts, then
    resets: it cannot refuse outright as kube-proxy's reject rule does)."""
    try:
        connect_status(address, port, 1, None)
    except (OSError, IndexError):
        return True
    return False


def test_a_node_port_without_ready_pods_refuses(fake_kube: FakeKube, core_v1: Core) -> None:
    made = core_v1.create_namespaced_service(NAMESPACE, _service("pf-none", "NodePort", "none"))
    node_port = made.spec.ports[0].node_port
    assert made.status.load_balancer.ingress is None
    assert wait_for(lambda: _refused("127.0.0.1", node_port), what="a refusal")


def test_a_taken_node_port_is_422(core_v1: Core) -> None:
    made = core_v1.create_namespaced_service(NAMESPACE, _service("pf-a", "NodePort", "a"))
    taken = made.spec.ports[0].node_port
    body = _service("pf-b", "NodePort", "b")
    body["spec"]["ports"][0]["nodePort"] = taken
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_service(NAMESPACE, body)
    assert exc.value.status == 422
    assert "provided port is already allocated" in status_body(exc.value)["message"]


def test_a_cluster_ip_service_has_an_address_and_defaults(core_v1: Core) -> None:
    made = core_v1.create_namespaced_service(NAMESPACE, _service("pf-c", "ClusterIP", "c"))
    assert made.spec.cluster_ip.startswith("127.")
    assert made.spec.ports[0].protocol == "TCP"
    assert made.spec.ports[0].node_port is None
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_service(
            NAMESPACE, _service("1-starts-with-a-digit", "ClusterIP", "c")
        )
    assert exc.value.status == 422
    assert "DNS-1035 label" in status_body(exc.value)["message"]
    assert isinstance(client.V1Service, type)
