"""The gateway with leased proxies of each scheme: CONNECT and plain HTTP through HTTPS
and SOCKS5 upstreams, their refusals, and their credentials kept from the client."""

from __future__ import annotations

import time
from pathlib import Path

from tests.api.helpers import PROVIDER
from tests.gateway.conftest import StartGateway, connect_head, eventually, raw_request
from tests.gateway.test_upstream_dialer import tls_proxy

from proxyfleet.common.store import LeaseStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Scheme

_ids = iter(range(1_000_000))


async def upstream_proxy(
    registry: ProxyRegistry,
    scheme: Scheme,
    port: int,
    username: str,
    password: str,
    *,
    zone: str = "z1",
) -> str:
    """A ready proxy of `scheme` on 127.0.0.1:port straight through the registry (what a
    static provider and health do); its id."""
    now = time.time()
    pid = f"up{next(_ids):05d}"
    proxy = Proxy(
        id=pid, provider=PROVIDER, zone=zone, phase=Phase.PENDING, gen=0, scheme=scheme,
        external=True, username=username, password=password, created_at=now, updated_at=now,
    )  # fmt: skip
    assert await registry.create(proxy)
    await registry.transition(pid, Phase.PROVISIONING)
    await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=port)
    await registry.transition(pid, Phase.READY, last_ok_at=now)
    return pid


async def test_a_tunnel_through_an_https_upstream_ends_when_its_client_closes(
    start_gateway: StartGateway, registry: ProxyRegistry, lease_store: LeaseStore, tmp_path: Path
) -> None:
    async with tls_proxy(tmp_path) as up:  # TLS, then 200 to CONNECT, then an echo
        await upstream_proxy(registry, Scheme.HTTPS, up.port, "tls-user", "tls-pw")
        gw = await start_gateway(upstream_ca_bundle=up.ca_file, cooldown=0.0)
        for _ in range(2):  # the second one gets the proxy its first released
            reply = await raw_request(gw.port, connect_head("127.0.0.1:9"))
            assert reply.status == 200
            reply.writer.write(b"ping")
            assert await reply.reader.readexactly(4) == b"ping"
            lease_id = reply.header("X-Proxyfleet-Lease-Id")
            reply.writer.close()  # a FIN: TLS cannot pass it on, so the tunnel ends
            await eventually(lambda: len(gw.tunnels) == 0)
            assert lease_id is not None
            found = await lease_store.get(lease_id)
            assert found is not None
            assert found[1] == "released"
