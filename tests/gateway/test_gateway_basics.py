"""Real clients (curl, httpx, requests) through a gateway to the HTTPS target over real
Squids: a lease per connection, rotation, the ids in headers, the refusals."""

from __future__ import annotations

import asyncio
import base64
import ssl
from unittest.mock import ANY

import httpx
import redis.asyncio as aioredis
import requests
from tests.api.helpers import CLIENT, CLIENT_NAME
from tests.conftest import TargetServer
from tests.gateway.conftest import (
    StartGateway,
    connect_head,
    curl,
    eventually,
    raw_request,
)
from tests.health.conftest import PASSWORD, USER

from proxyfleet.common.store import LeaseStore, ProxyRegistry


def _ssl(target: TargetServer) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=target.ca_file)


def _secrets() -> list[bytes]:
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode())
    return [PASSWORD.encode(), basic]


async def test_curl_rotates_a_proxy_per_connection(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway()
    seen = []
    for _ in range(len(fleet)):
        got = await curl(gw.url(), target.url, ca_file=target.ca_file)
        assert got.code == 0, got.stderr
        assert b'"ip"' in got.body
        [proxy_id] = got.header("X-Proxyfleet-Proxy-Id")
        assert got.header("X-Proxyfleet-Lease-Id")
        seen.append(proxy_id)
    # cooldown 30 s: each released proxy rests, so each connection got another one
    assert sorted(seen) == sorted(fleet)
    late = await curl(gw.url(), target.url, ca_file=target.ca_file)
    assert "503" in late.head
    assert late.header("Retry-After")
    assert late.header("Proxy-Status")[0].startswith("proxyfleet-gateway; error=")


async def test_httpx_and_requests_fetch_through_it(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0)
    async with httpx.AsyncClient(proxy=gw.url(), verify=_ssl(target), timeout=10) as client:
        answer = await client.get(target.url)
    assert answer.status_code == 200
    assert "ip" in answer.json()

    def with_requests() -> requests.Response:
        proxies = {"https": gw.url("crawler-zone-z1")}
        return requests.get(target.url, proxies=proxies, verify=target.ca_file, timeout=10)

    answer2 = await asyncio.to_thread(with_requests)
    assert answer2.status_code == 200


async def test_the_lease_ends_with_the_connection(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    redis_client: aioredis.Redis,
    lease_store: LeaseStore,
) -> None:
    gw = await start_gateway()
    reply = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
    assert reply.status == 200
    lease_id = reply.header("X-Proxyfleet-Lease-Id")
    assert lease_id
    assert reply.header("X-Proxyfleet-Lease-Epoch")
    assert len(gw.tunnels) == 1
    assert await lease_store.get(lease_id) == (ANY, "active")
    reply.close()
    await eventually(lambda: len(gw.tunnels) == 0)
    found = await lease_store.get(lease_id)
    assert found is not None
    assert found[1] == "released"
    assert found[0].client == CLIENT_NAME  # the token's lease, as if granted by the API
    # Kept for the gateway's ended_lease_ttl, not the API's day: one lease per connection.
    [key] = [k async for k in redis_client.scan_iter(match=f"*:lease:{lease_id}")]
    assert 0 < await redis_client.ttl(key) <= 600  # the default ended_lease_ttl


async def test_refusals_407_and_400(start_gateway: StartGateway, fleet: dict[str, int]) -> None:
    gw = await start_gateway()
    authority = "127.0.0.1:443"
    bare = await raw_request(gw.port, f"CONNECT {authority} HTTP/1.1\r\n\r\n".encode())
    assert bare.status == 407
    assert bare.header("Proxy-Authenticate") == 'Basic realm="proxyfleet"'
    wrong = await raw_request(gw.port, connect_head(authority, token="not-a-token-at-all"))
    assert wrong.status == 407
    bad = await raw_request(gw.port, connect_head(authority, username="c-sesion-x"))
    assert bad.status == 400
    body = await bad.reader.read()
    assert b"sesion" in body
    assert "username sesion" in (bad.header("Proxy-Status") or "")
    zone = await raw_request(gw.port, connect_head(authority, username="c-zone-nowhere"))
    assert zone.status == 400
    assert b"zone" in await zone.reader.read()
    for reply in (bare, wrong, bad, zone):
        reply.close()


async def test_an_empty_pool_is_a_503_with_retry_after(
    start_gateway: StartGateway, registry: ProxyRegistry
) -> None:
    assert await registry.size() == 0
    gw = await start_gateway()
    reply = await raw_request(gw.port, connect_head("127.0.0.1:443"))
    assert reply.status == 503
    assert reply.header("Retry-After")
    assert (reply.header("Proxy-Status") or "").startswith(
        "proxyfleet-gateway; error=proxy_internal_response"
    )
    reply.close()


async def test_the_upstream_credentials_never_reach_a_client(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0)
    received = []
    ok = await curl(gw.url(), target.url, "-v", ca_file=target.ca_file)
    received += [ok.head.encode(), ok.body]
    for username, token in [("c", "bad-token-xxxxxxxx"), ("c-zone-", CLIENT), ("c", CLIENT)]:
        got = await curl(gw.url(username, token), target.url, "-v", ca_file=target.ca_file)
        received += [got.head.encode(), got.body]
    everything = b"".join(received)
    assert b"X-Proxyfleet-Proxy-Id" in everything
    for secret in _secrets():
        assert secret not in everything
