"""Egress modes end to end: every service as a process, provisioner-k8s on the fake API
server, health probing each pod's real Squid to the dev stack's echo target. In pod mode
two proxies on one node record one egress IP (their node's); in host_network mode each
proxy records its own node's address, which is also where clients reach it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.e2e.journey import Api, wait_for
from tests.e2e.k8s_stack import PROVIDER, k8s_stack

pytestmark = pytest.mark.timeout(300)


def _two_ready_proxies_with_egress(admin: Api) -> list[dict[str, Any]]:
    started = time.monotonic()
    r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 2})
    assert r.status_code == 202, r.text
    ids = [p["id"] for p in r.json()["items"]]

    def known() -> list[dict[str, Any]] | None:
        got = [admin.proxy(i) for i in ids]
        done = all(p["phase"] == "ready" and p["egress_ip"] for p in got)
        return got if done else None

    wait_for("2 ready proxies with their egress IP", known, timeout=90)
    took = time.monotonic() - started
    print(f"\n2 proxies ready with their egress IP {took:.1f} s after the create")
    # Read again: the first read of the wait may predate the second proxy's address.
    return [admin.proxy(i) for i in ids]


def test_pod_mode_proxies_on_one_node_record_its_one_egress_ip(
    fake_kube_factory: Any, nats_url: str, redis_url: str
) -> None:
    fake = fake_kube_factory(nodes=1)
    with k8s_stack(fake, nats_url, redis_url, db=8) as stack:
        proxies = _two_ready_proxies_with_egress(Api(stack.api_url, stack.admin_token))
    node = fake.node_address("fake-node")
    assert [p["egress_ip"] for p in proxies] == [node, node]
    assert len({p["host"] for p in proxies}) == 2  # two pods, two pod IPs, one exit
    # Health flags the shared exit: each proxy's address is held by both.
    assert [p["egress_shared"] for p in proxies] == [2, 2]


def test_host_network_proxies_record_their_own_nodes_addresses(
    fake_kube_factory: Any, nats_url: str, redis_url: str
) -> None:
    fake = fake_kube_factory(nodes=2)
    extra = "      egress_mode: host_network\n      host_port_range: [20000, 20999]\n"
    with k8s_stack(fake, nats_url, redis_url, db=15, extra_yaml=extra) as stack:
        proxies = _two_ready_proxies_with_egress(Api(stack.api_url, stack.admin_token))
    nodes = {fake.node_address(n.name) for n in fake.nodes}
    assert {p["egress_ip"] for p in proxies} == nodes
    for p in proxies:
        assert p["egress_ip"] == p["host"]
        assert 20000 <= p["port"] <= 20999
        assert p["egress_shared"] == 1
