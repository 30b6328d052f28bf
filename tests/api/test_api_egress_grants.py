"""POST /v1/leases by exit address: the provider's default `ip` exclusivity (409
egress_held / egress_cooling for a named proxy), a pool's own mode set through the API,
`distinct` grants and their 503, the exit address in the answer and the lease."""

from __future__ import annotations

from tests.api.helpers import PROVIDER, Api, error_of, ready_proxy

from proxyfleet.common.domain.egress import network


async def on_address(api: Api, pid: str, ip: str, pool: str = "") -> None:
    await ready_proxy(api, pid, pool=pool)
    await api.registry.update(pid, egress_ip=ip, egress_net=network(ip))


async def test_two_proxies_on_one_address_are_never_leased_at_once(api: Api) -> None:
    await on_address(api, "a", "127.0.1.1")
    await on_address(api, "b", "127.0.1.1")
    first = await api.client.post("/v1/leases", json={"ttl": 60})
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["proxy"]["egress_ip"] == "127.0.1.1"
    refused = await api.client.post("/v1/leases", json={})
    assert refused.status_code == 503, refused.text
    assert "exit address another lease holds" in refused.json()["message"]
    assert refused.headers["retry-after"] == "60"
    other = "b" if body["proxy"]["id"] == "a" else "a"
    named = await api.client.post("/v1/leases", json={"proxy_id": other})
    assert named.status_code == 409, named.text
    assert error_of(named) == "egress_held"
    assert named.headers["retry-after"] == "60"
    lease = await api.client.get(f"/v1/leases/{body['lease_id']}")
    assert lease.json()["egress_ip"] == "127.0.1.1"
    released = await api.client.post(
        f"/v1/leases/{body['lease_id']}/release", json={"epoch": body["epoch"]}
    )
    assert released.status_code == 200, released.text
    cooling = await api.client.post("/v1/leases", json={"proxy_id": other})
    assert cooling.status_code == 409, cooling.text
    assert error_of(cooling) == "egress_cooling"
    assert cooling.headers["retry-after"] == "30"  # the API's cooldown, on the address


async def test_a_pool_declared_through_the_api_sets_its_own_mode(api: Api) -> None:
    spec = {"provider": PROVIDER, "size": 2, "egress_exclusive": "none"}
    put = await api.admin.put("/v1/pools/shared", json=spec)
    assert put.status_code in (200, 201), put.text
    assert (await api.admin.get("/v1/pools/shared")).json()["spec"]["egress_exclusive"] == "none"
    await on_address(api, "m1", "127.0.2.1", pool="shared")
    await on_address(api, "m2", "127.0.2.1", pool="shared")
    for _ in range(2):
        granted = await api.client.post("/v1/leases", json={"pool": "shared"})
        assert granted.status_code == 201, granted.text
    bad = await api.admin.put("/v1/pools/odd", json={**spec, "egress_exclusive": "host"})
    assert bad.status_code == 400, bad.text
    assert "egress_exclusive" in bad.json()["message"]


async def test_distinct_grants_spread_a_client_over_networks(api: Api) -> None:
    await on_address(api, "a1", "127.0.3.1")
    await on_address(api, "a2", "127.0.3.2")
    await on_address(api, "b1", "127.0.4.1")
    nets = set()
    for _ in range(2):
        granted = await api.client.post("/v1/leases", json={"distinct": "subnet"})
        assert granted.status_code == 201, granted.text
        nets.add(network(granted.json()["proxy"]["egress_ip"]))
    assert nets == {"127.0.3.0/24", "127.0.4.0/24"}
    refused = await api.client.post("/v1/leases", json={"distinct": "subnet"})
    assert refused.status_code == 503, refused.text
    assert refused.json() == {
        "error": "egress_not_distinct",
        "message": "no proxy on an exit network this client does not already hold",
    }
    assert refused.headers["retry-after"]
    # Another client's leases are its own: the free proxy of a held /24 is granted to it.
    other = await api.other.post("/v1/leases", json={"distinct": "subnet"})
    assert other.status_code == 201, other.text
    bad = await api.client.post("/v1/leases", json={"distinct": "host"})
    assert bad.status_code == 400, bad.text
    assert "field distinct" in bad.json()["message"]
