"""Egress modes against the fake API server, real Squids and the loopback echo target:
pod mode's proxies on one node leave through the node's one address; host_network's each
through its own node's, one pod per node, and a pod more than the nodes waits Pending."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.contract.provider_contract import new_proxy_id
from tests.k8s.k8s_provider import FAST, NAMESPACE, eventually, opened, spec_for, until_ready

from proxyfleet.common.core.errors import TemporaryProviderError
from proxyfleet.common.wire.models import Provisioned, ProxySpec
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.pure import egress, names
from proxyfleet.provisioner_k8s.settings import Tuning

INSTALLATION = "k8s-egress"
PORTS = (20000, 20999)
SHORT = Tuning(request_timeout=10.0, address_timeout=2.0, sweep_interval=FAST.sweep_interval,
               sweep_min_age=FAST.sweep_min_age)  # fmt: skip
"""A create that cannot get an address gives up in 2 s."""


async def _exit_address(done: Provisioned, spec: ProxySpec, target: Any) -> str:
    """The address the echo target saw through the proxy (a real CONNECT)."""
    tls = ssl.create_default_context(cafile=target.ca_file)
    url = f"http://{spec.username}:{spec.password}@{done.host}:{done.port}"
    async with httpx.AsyncClient(proxy=url, verify=tls, timeout=10.0) as client:
        answer = await client.get(target.url)
    assert answer.status_code == 200
    return str(answer.json()["ip"])


async def _ready_proxy(provider: K8sProvider, target: Any) -> tuple[ProxySpec, Provisioned]:
    spec = spec_for(new_proxy_id(), INSTALLATION)
    done = await provider.create(spec)
    await until_ready(provider, spec.proxy_id)
    return spec, done


def _pod(fake: Any, proxy_id: str) -> dict[str, Any]:
    [pod] = [
        p for p in fake.objects("pods", NAMESPACE)
        if p["metadata"]["name"] == names.object_name(proxy_id)
    ]  # fmt: skip
    return dict(pod)


async def test_pod_mode_proxies_on_one_node_share_its_address(
    fake_kube: Any, tmp_path: Path, target: Any
) -> None:
    ports = [443, target.port]
    async with opened(fake_kube, tmp_path, INSTALLATION, connect_ports=ports) as provider:
        made = [await _ready_proxy(provider, target) for _ in range(2)]
        node = fake_kube.node_address("fake-node")
        hosts = {done.host for _, done in made}
        exits = {await _exit_address(done, spec, target) for spec, done in made}
    assert len(hosts) == 2  # each pod listens on an address of its own...
    assert node not in hosts
    assert exits == {node}  # ...and both leave through their node's


async def test_host_network_gives_each_proxy_its_own_nodes_address(
    fake_kube_factory: Any, tmp_path: Path, target: Any
) -> None:
    fake = fake_kube_factory(nodes=2)
    settings = {"connect_ports": [443, target.port], "egress_mode": "host_network",
                "host_port_range": list(PORTS), "tuning": SHORT}  # fmt: skip
    async with opened(fake, tmp_path, INSTALLATION, **settings) as provider:
        made = [await _ready_proxy(provider, target) for _ in range(2)]
        nodes = {n.name: n.address for n in fake.nodes}
        for spec, done in made:
            pod = _pod(fake, spec.proxy_id)
            assert pod["spec"]["hostNetwork"] is True
            assert done.host == nodes[pod["spec"]["nodeName"]]
            assert done.port == egress.host_port(spec.proxy_id, PORTS)
            assert await _exit_address(done, spec, target) == done.host
        assert {done.host for _, done in made} == set(nodes.values())
        # Re-adoption after a store reset finds the same address and port.
        listed = {m.proxy_id: (m.host, m.port) for m in await provider.list_managed()}
        assert listed == {spec.proxy_id: (done.host, done.port) for spec, done in made}
        # The pod's own address is its node's: no Node read, nothing outside the Role.
        used = {resource for _, _, resource in fake.rbac_calls()}
        assert used <= {"pods", "secrets", "configmaps", "services"}

        # A third proxy: no node is free of a proxy pod, so it waits unscheduled and its
        # create gives up (the runner retries it, then fails the proxy).
        third = spec_for(new_proxy_id(), INSTALLATION)
        with pytest.raises(TemporaryProviderError, match="no address after"):
            await provider.create(third)
        pending = _pod(fake, third.proxy_id)
        assert "nodeName" not in pending["spec"]
        [scheduled] = [c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        assert "anti-affinity" in scheduled["message"]

        # Room made: the pending pod takes the freed node (and its address).
        first_spec, first = made[0]
        await provider.delete(first_spec.proxy_id, first.resource_id)
        await eventually(lambda: _pod(fake, third.proxy_id)["spec"].get("nodeName"), 30)
        done = await provider.create(third)
        await until_ready(provider, third.proxy_id)
        assert done.host == first.host
        assert await _exit_address(done, third, target) == first.host


async def test_egress_gateway_labels_and_annotates_the_pod(
    fake_kube: Any, tmp_path: Path, target: Any
) -> None:
    gateway = {
        "labels": {"egress.example.com/gateway": "red"},
        "annotations": {"egress.projectcalico.org/selector": "egress-code == 'red'"},
    }
    settings = {"connect_ports": [443, target.port], "egress_mode": "egress_gateway",
                "egress_gateway": gateway}  # fmt: skip
    async with opened(fake_kube, tmp_path, INSTALLATION, **settings) as provider:
        spec, done = await _ready_proxy(provider, target)
        pod = _pod(fake_kube, spec.proxy_id)
        # The fake has no gateway: the proxy works, leaving through its node as in pod mode.
        assert await _exit_address(done, spec, target) == fake_kube.node_address("fake-node")
    assert pod["metadata"]["labels"]["egress.example.com/gateway"] == "red"
    annotations = pod["metadata"]["annotations"]
    assert annotations["egress.projectcalico.org/selector"] == "egress-code == 'red'"
    [secret] = [s for s in fake_kube.objects("secrets", NAMESPACE)
                if s["metadata"]["name"] == pod["metadata"]["name"]]  # fmt: skip
    assert "egress.example.com/gateway" not in secret["metadata"]["labels"]
