"""The gateway grants by exit address as the API does: the providers' exclusivity modes
reach its grants (here `subnet`: one lease per /24 of 127/8 at a time)."""

from __future__ import annotations

import msgspec
from tests.api.helpers import PROVIDER, providers_config
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, raw_request

from proxyfleet.common.domain.egress import EgressSettings, network
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import LeaseStore, ProxyRegistry


def subnet_exclusive() -> ProvidersConfig:
    config = providers_config()
    providers = [
        msgspec.structs.replace(p, egress=EgressSettings(exclusive="subnet"))
        if p.name == PROVIDER
        else p
        for p in config.providers
    ]
    return msgspec.structs.replace(config, providers=providers)


async def test_gateway_grants_hold_the_providers_exit_networks(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    registry: ProxyRegistry,
    lease_store: LeaseStore,
    target: TargetServer,
) -> None:
    """Three Squids, two of them leaving through one /24: two tunnels at once get the two
    networks; a third waits (503), though a proxy of the shared /24 is free."""
    addresses = ["127.0.9.1", "127.0.9.2", "127.0.10.1"]
    for pid, ip in zip(sorted(fleet), addresses, strict=True):
        await registry.update(pid, egress_ip=ip, egress_net=network(ip))
    gw = await start_gateway(providers=subnet_exclusive())
    head = connect_head(f"127.0.0.1:{target.port}")
    tunnels = [await raw_request(gw.port, head) for _ in range(2)]
    try:
        assert [t.status for t in tunnels] == [200, 200]
        nets = set()
        for t in tunnels:
            found = await lease_store.get(t.header("X-Proxyfleet-Lease-Id") or "")
            assert found is not None
            assert found[1] == "active"
            nets.add(network(found[0].egress_ip))
        assert nets == {"127.0.9.0/24", "127.0.10.0/24"}
        third = await raw_request(gw.port, head)
        assert third.status == 503
        third.close()
    finally:
        for t in tunnels:
            t.close()
