"""The dev stack end to end: health learns each local proxy's own loopback exit address from
the target's echo, and proxies placed on one `egress_address` are seen on one."""

from __future__ import annotations

import ipaddress

import pytest
from tests.e2e.journey import Api, wait_for

from proxyfleet.common.local_egress import DEFAULT_EGRESS_RANGE
from proxyfleet.devstack.providers import squid_installed
from proxyfleet.devstack.stack import Stack

pytestmark = pytest.mark.timeout(120)
SHARED = "127.77.250.20"


def test_health_sees_each_proxy_s_own_address_or_the_shared_one(stack: Stack) -> None:
    assert squid_installed(), "Squid is what gives local proxies their own addresses"
    admin = Api(stack.api_url, stack.admin_token)
    ids = []
    for placement in ({}, {}, {"egress_address": SHARED}, {"egress_address": SHARED}):
        r = admin.http.post("/v1/proxies", json={"provider": "local", "placement": placement})
        assert r.status_code == 202, r.text
        ids += [p["id"] for p in r.json()["items"]]

    def addresses() -> list[str] | None:
        found = [admin.proxy(pid) for pid in ids]
        if all(p["phase"] == "ready" and p["egress_ip"] for p in found):
            return [str(p["egress_ip"]) for p in found]
        return None

    own_a, own_b, shared_a, shared_b = wait_for("4 ready proxies with addresses", addresses, 40)
    network = ipaddress.IPv4Network(DEFAULT_EGRESS_RANGE)
    assert own_a != own_b
    assert all(ipaddress.IPv4Address(a) in network for a in (own_a, own_b))
    assert shared_a == shared_b == SHARED
    r = admin.http.post(
        "/v1/proxies", json={"provider": "local", "placement": {"egress_address": "10.0.0.1"}}
    )
    assert r.status_code == 400
    assert "placement.egress_address" in r.json()["message"]
