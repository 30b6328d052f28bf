"""The SOCKS5 listener with real clients (curl --socks5-hostname, httpx with socksio,
requests with PySocks) over the real Squids: tunnels on leases of the token's, a session
sticking to one proxy across connections and replicas, names passed on unresolved, and a
stopping gateway draining its SOCKS5 tunnels as its HTTP ones."""

from __future__ import annotations

import asyncio
import json
import ssl

import httpx
import pytest
import requests
from tests.api.helpers import CLIENT, CLIENT_NAME
from tests.conftest import TargetServer
from tests.gateway.conftest import RunningGateway, StartGateway, curl, eventually
from tests.gateway.socks_clients import domain, handshake, ipv4, socks_curl, socks_request
from tests.gateway.test_gateway_upstreams import Upstream, assert_hidden, leased
from tests.upstreams.socks5 import Socks5Upstream
from tests.upstreams.tls_proxy import TlsUpstream

from proxyfleet.common.domain.socks5 import Reply
from proxyfleet.common.store import LeaseStore, ProxyRegistry
from proxyfleet.common.wire.models import Scheme
from proxyfleet.devstack.servers import free_port
from proxyfleet.gateway import upstream as upstream_module


async def _socks_gateway(start_gateway: StartGateway, **settings: object) -> RunningGateway:
    gw = await start_gateway(socks_port=free_port(), **settings)
    assert gw.assembly.gateway.socks_port > 0
    return gw


def _socks_port(gw: RunningGateway) -> int:
    return gw.assembly.gateway.socks_port


async def test_curl_fetches_through_the_socks5_listener_on_a_lease(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    lease_store: LeaseStore,
) -> None:
    gw = await _socks_gateway(start_gateway, cooldown=0.0)
    got = await socks_curl(
        _socks_port(gw), f"https://localhost:{target.port}/probe", ca_file=target.ca_file
    )
    assert got.code == 0, got.stderr
    assert json.loads(got.body)["ip"] == "127.0.0.1"
    # its lease was the token's, granted for the name, and released once curl closed
    tunnel = await handshake(_socks_port(gw), socks_request(domain("localhost"), target.port))
    assert tunnel.code == Reply.SUCCEEDED
    [hold] = gw.tunnels.holds()
    assert (hold.owner, hold.target, hold.proxy.id in fleet) == (CLIENT_NAME, "localhost", True)
    tunnel.close()
    await eventually(lambda: not gw.tunnels.holds())
    found = await lease_store.get(hold.lease_id)
    assert found is not None
    assert (found[0].client, found[1]) == (CLIENT_NAME, "released")


async def test_httpx_and_requests_with_their_socks_extras(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await _socks_gateway(start_gateway, cooldown=0.0)
    url = f"https://localhost:{target.port}/probe"
    proxy = f"socks5://crawler-zone-z1:{CLIENT}@127.0.0.1:{_socks_port(gw)}"
    verify = ssl.create_default_context(cafile=target.ca_file)
    async with httpx.AsyncClient(proxy=proxy, verify=verify) as client:
        answer = await client.get(url)
    assert answer.status_code == 200
    assert answer.json()["ip"] == "127.0.0.1"
    # requests is blocking: in a thread, the gateway serving in this loop meanwhile
    proxies = {"https": proxy.replace("socks5://", "socks5h://")}
    got = await asyncio.to_thread(
        requests.get, url, proxies=proxies, verify=target.ca_file, timeout=10
    )
    assert got.status_code == 200
    assert got.json()["ip"] == "127.0.0.1"


async def _proxy_of(gw: RunningGateway, username: str, target: TargetServer) -> str:
    """The proxy a SOCKS5 connection with this username rides on (read while it is open)."""
    tunnel = await handshake(_socks_port(gw), socks_request(ipv4(), target.port), username=username)
    assert tunnel.code == Reply.SUCCEEDED
    [hold] = gw.tunnels.holds()
    tunnel.close()
    await eventually(lambda: not gw.tunnels.holds())
    return hold.proxy.id


async def test_a_socks5_session_sticks_across_connections_and_replicas(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    one = await _socks_gateway(start_gateway, cooldown=0.0)
    two = await _socks_gateway(start_gateway, cooldown=0.0)
    seen = [await _proxy_of(gw, "c-session-sx", target) for gw in (one, two, one, two)]
    assert len(set(seen)) == 1
    # rotation beside it never gets the session's proxy
    assert await _proxy_of(one, "c", target) not in seen
    # and curl with that session's username rides the same, through either listener
    got = await socks_curl(_socks_port(two), target.url, "c-session-sx", ca_file=target.ca_file)
    assert got.code == 0, got.stderr
    http = await curl(one.url("c-session-sx"), target.url, ca_file=target.ca_file)
    assert http.code == 0, http.stderr
    assert http.header("X-Proxyfleet-Proxy-Id") == seen[:1]


@pytest.mark.parametrize("scheme", [Scheme.SOCKS5, Scheme.SOCKS5H, Scheme.HTTPS])
async def test_a_name_reaches_each_kind_of_upstream_unresolved(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    target: TargetServer,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    scheme: Scheme,
) -> None:
    """Through each kind of leased proxy, in its own protocol, a SOCKS5 client's name goes
    as a name, `socks5` upstreams included: the gateway's resolver (which the HTTP side
    uses for `socks5`) is never asked."""

    async def no_lookup(host: str, port: int) -> str:
        raise AssertionError(f"the gateway resolved {host}")

    monkeypatch.setattr(upstream_module, "resolve", no_lookup)
    if scheme == Scheme.HTTPS:
        tls: TlsUpstream = request.getfixturevalue("tls_upstream")
        up = Upstream(scheme, tls.port, tls.username, tls.password, tls.exit_address,
                      tls.ca_file)  # fmt: skip
    else:
        socks: Socks5Upstream = request.getfixturevalue("socks5_upstream")
        up = Upstream(scheme, socks.port, socks.username, socks.password,
                      socks.exit_address)  # fmt: skip
    await leased(registry, up)
    gw = await _socks_gateway(start_gateway, upstream_ca_bundle=up.ca_file)
    got = await socks_curl(
        _socks_port(gw), f"https://localhost:{target.port}/probe", ca_file=target.ca_file
    )
    assert got.code == 0, got.stderr
    assert json.loads(got.body)["ip"] == up.exit_address
    assert_hidden(up.secrets(), got.head, got.body, got.stderr)


async def test_a_lease_that_ends_closes_its_socks5_tunnel(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    lease_store: LeaseStore,
) -> None:
    gw = await _socks_gateway(start_gateway)
    tunnel = await handshake(_socks_port(gw), socks_request(ipv4(), target.port))
    assert tunnel.code == Reply.SUCCEEDED
    [hold] = gw.tunnels.holds()
    await lease_store.release(hold.lease_id, hold.epoch, hold.owner, hold.owner)
    assert await tunnel.closed()  # the lease.released event reached the gateway
    await eventually(lambda: len(gw.tunnels) == 0)


async def test_a_stopping_gateway_drains_its_socks5_tunnels(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await _socks_gateway(start_gateway, drain_seconds=30.0)
    port = _socks_port(gw)
    tunnel = await handshake(port, socks_request(ipv4(), target.port))
    assert tunnel.code == Reply.SUCCEEDED
    gw.stop.set()
    for _ in range(100):  # no new connection is taken (refused, or reset while queued)
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except (ConnectionRefusedError, ConnectionResetError):
            break
        writer.close()
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the SOCKS5 port still accepts connections")
    # the open tunnel still carries a whole HTTPS request meanwhile
    await tunnel.writer.start_tls(ssl.create_default_context(cafile=target.ca_file))
    tunnel.writer.write(b"GET /probe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    answer = await asyncio.wait_for(tunnel.reader.read(), 10)
    assert answer.startswith(b"HTTP/1.1 200")
    assert not any(task.done() for task in gw.components)  # still draining
    tunnel.close()
    async with asyncio.timeout(10):
        await asyncio.gather(*gw.components)
