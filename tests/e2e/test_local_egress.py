"""The dev stack end to end: health learns each local proxy's own loopback exit address from
the target's echo, and proxies placed on one `egress_address` are seen on one."""

from __future__ import annotations

import ipaddress

import pytest
from tests.e2e.journey import Api, wait_for

from proxyfleet.devstack.providers import squid_installed
from proxyfleet.devstack.stack import Stack
from proxyfleet.provisioner_local.pure.egress_addresses import DEFAULT_EGRESS_RANGE

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

    # Exclusive by address (`ip`, the default): the two proxies on SHARED never at once.
    client = Api(stack.api_url, stack.client_token)
    first = client.http.post("/v1/leases", json={"proxy_id": ids[2], "ttl": 30})
    assert first.status_code == 201, first.text
    assert first.json()["proxy"]["egress_ip"] == SHARED
    held = client.http.post("/v1/leases", json={"proxy_id": ids[3], "ttl": 30})
    assert held.status_code == 409, held.text
    assert held.json()["error"] == "egress_held"
    assert "Retry-After" in held.headers

    # Diversity: this client's next lease leaves from another /24 than SHARED's.
    third = client.http.post("/v1/leases", json={"distinct": "subnet", "ttl": 30})
    assert third.status_code == 201, third.text
    assert third.json()["proxy"]["egress_ip"] in (own_a, own_b)
    fourth = client.http.post("/v1/leases", json={"distinct": "subnet", "ttl": 30})
    if _net(own_a) == _net(own_b):  # both by-port addresses in one /24: no network left
        assert fourth.status_code == 503, fourth.text
        assert fourth.json()["error"] == "egress_not_distinct"
    else:
        assert fourth.status_code == 201, fourth.text
    for lease in (first, third, fourth):
        if lease.status_code == 201:
            body = lease.json()
            path = f"/v1/leases/{body['lease_id']}/release"
            r = client.http.post(path, json={"epoch": body["epoch"]})
            assert r.status_code == 200, r.text


def _net(ip: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"{ip}/24", strict=False)
