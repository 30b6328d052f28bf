"""Per-client limits on a running gateway with real Squids: a client at its limit gets 429
(or SOCKS5 reply 2) while another client is served, across two replicas sharing Redis;
the rate limit's Retry-After."""

from __future__ import annotations

import time
from functools import partial

from prometheus_client import REGISTRY
from tests.api.helpers import CLIENT_NAME, OTHER_CLIENT, OTHER_CLIENT_NAME
from tests.conftest import TargetServer
from tests.gateway.conftest import (
    RawReply,
    RunningGateway,
    StartGateway,
    connect_head,
    curl,
    eventually,
    raw_request,
)
from tests.gateway.socks_clients import handshake, ipv4, socks_request

from proxyfleet.common.domain.socks5 import Reply
from proxyfleet.devstack.servers import free_port


def _limited(limit: str) -> float:
    labels = {"client": CLIENT_NAME, "limit": limit}
    return REGISTRY.get_sample_value("proxyfleet_gateway_client_limited_total", labels) or 0.0


def _gone(gw: RunningGateway, client: str) -> bool:
    """Whether `client` has no connection left on `gw` (each ends after its release)."""
    return gw.assembly.quota.connections(client) == 0


def _assert_429(reply: RawReply, limit: str, error: str) -> None:
    assert reply.status == 429, reply.head
    status = reply.header("Proxy-Status") or ""
    assert f"error={error}" in status
    assert f"client limit {limit}" in status


async def test_a_client_at_its_connection_limit_gets_429_and_another_is_served(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(
        cooldown=0.0, socks_port=free_port(), client_limit=(f"{CLIENT_NAME}:connections=1",)
    )
    authority = f"127.0.0.1:{target.port}"
    before = _limited("connections")
    first = await raw_request(gw.port, connect_head(authority))
    assert first.status == 200
    over = await raw_request(gw.port, connect_head(authority))
    _assert_429(over, "connections", "connection_limit_reached")
    assert over.header("Retry-After") == "1"
    over.close()
    socks = await handshake(gw.assembly.gateway.socks_port, socks_request(ipv4(), target.port))
    assert socks.code == Reply.NOT_ALLOWED  # the SOCKS5 listener's answer to a limit
    socks.close()
    assert _limited("connections") == before + 2
    others = [await raw_request(gw.port, connect_head(authority, token=OTHER_CLIENT))]
    others.append(await raw_request(gw.port, connect_head(authority, token=OTHER_CLIENT)))
    assert [o.status for o in others] == [200, 200]
    for o in others:
        o.close()
    first.close()
    await eventually(partial(_gone, gw, CLIENT_NAME))
    await eventually(partial(_gone, gw, OTHER_CLIENT_NAME))  # the fleet's 3 proxies free
    again = await raw_request(gw.port, connect_head(authority))
    assert again.status == 200
    again.close()


async def test_the_limit_holds_across_two_replicas(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    settings = {
        "cooldown": 0.0,
        "limits_sync_interval": 0.05,
        "client_limit": (f"{CLIENT_NAME}:connections=2",),
    }
    a = await start_gateway(**settings)
    b = await start_gateway(**settings)
    authority = f"127.0.0.1:{target.port}"
    on_a = await raw_request(a.port, connect_head(authority))
    on_b = await raw_request(b.port, connect_head(authority))
    assert (on_a.status, on_b.status) == (200, 200)
    # each replica learns of the other's connection at its next sync
    await eventually(lambda: a.assembly.quota.connections(CLIENT_NAME) == 2)
    await eventually(lambda: b.assembly.quota.connections(CLIENT_NAME) == 2)
    for gw in (a, b):
        over = await raw_request(gw.port, connect_head(authority))
        _assert_429(over, "connections", "connection_limit_reached")
        over.close()
        other = await raw_request(gw.port, connect_head(authority, token=OTHER_CLIENT))
        assert other.status == 200  # another client is unaffected
        other.close()
        # its lease released (the fleet's third proxy free again) before it counts as gone
        await eventually(partial(_gone, gw, OTHER_CLIENT_NAME))
    on_a.close()  # a connection ends on A: B may take one more once it knows
    await eventually(lambda: b.assembly.quota.connections(CLIENT_NAME) == 1)
    more = await raw_request(b.port, connect_head(authority))
    assert more.status == 200
    more.close()
    on_b.close()


async def test_over_the_rate_is_429_with_retry_after(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0, client_limit=(f"{CLIENT_NAME}:rate=0.5,burst=1",))
    authority = f"127.0.0.1:{target.port}"
    first = await raw_request(gw.port, connect_head(authority))
    assert first.status == 200
    first.close()
    over = await raw_request(gw.port, connect_head(authority))
    _assert_429(over, "rate", "http_request_denied")
    assert over.header("Retry-After") == "2"  # one connection every 2 s
    over.close()
    other = await raw_request(gw.port, connect_head(authority, token=OTHER_CLIENT))
    assert other.status == 200
    other.close()


async def test_a_session_s_lease_counts_once_against_the_leases_limit(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0, client_limit=(f"{CLIENT_NAME}:leases=1",))
    authority = f"127.0.0.1:{target.port}"
    session = "crawler-session-cart42"
    first = await raw_request(gw.port, connect_head(authority, session))
    second = await raw_request(gw.port, connect_head(authority, session))
    assert (first.status, second.status) == (200, 200)  # both on the session's one lease
    assert first.header("X-Proxyfleet-Lease-Id") == second.header("X-Proxyfleet-Lease-Id")
    own = await raw_request(gw.port, connect_head(authority))  # a lease of its own: a second
    _assert_429(own, "leases", "connection_limit_reached")
    own.close()
    other = await raw_request(gw.port, connect_head(authority, token=OTHER_CLIENT))
    assert other.status == 200
    for reply in (first, second, other):
        reply.close()


async def test_over_the_day_s_bytes_is_429_until_midnight_utc(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0, client_limit=(f"{CLIENT_NAME}:bytes_per_day=1KB",))
    got = await curl(gw.url(), target.url, ca_file=target.ca_file)  # a TLS handshake: > 1 KB
    assert got.code == 0, got.stderr
    await eventually(lambda: len(gw.tunnels) == 0)  # its bytes count as its relay ends
    over = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
    _assert_429(over, "bytes_per_day", "http_request_denied")
    retry = int(over.header("Retry-After") or 0)
    assert 0 < retry <= 86_400
    assert abs(retry - (86_400 - time.time() % 86_400)) < 5
    over.close()
    other = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}", token=OTHER_CLIENT))
    assert other.status == 200
    other.close()
