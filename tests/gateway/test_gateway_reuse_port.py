"""Several gateway processes on one host share one port with --reuse-port (what the
benchmark runs, one per core): the kernel spreads connections over them, and each serves
its share with leases of its own."""

from __future__ import annotations

from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, eventually, raw_request


async def test_two_gateways_share_a_port_with_reuse_port(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    first = await start_gateway(cooldown=0.0, reuse_port=True)
    second = await start_gateway(cooldown=0.0, reuse_port=True, port=first.port)
    assert second.port == first.port
    # 16 tunnels one after the other: the kernel hashes each to a listener, so both get
    # some (all on one listener has odds of 2 in 65,536)
    served = {"first": 0, "second": 0}
    leases = set()
    for _ in range(16):
        reply = await raw_request(first.port, connect_head(f"127.0.0.1:{target.port}"))
        try:
            assert reply.status == 200, reply.head
            leases.add(reply.header("X-Proxyfleet-Lease-Id"))
            await eventually(lambda: len(first.tunnels) + len(second.tunnels) == 1)
            served["first" if len(first.tunnels) else "second"] += 1
        finally:
            reply.close()
        await eventually(lambda: len(first.tunnels) + len(second.tunnels) == 0)
    assert min(served.values()) > 0, served
    assert len(leases) == 16  # a lease of its own per connection, whichever gateway
