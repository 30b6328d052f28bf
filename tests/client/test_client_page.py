"""The journey a user writes: lease a proxy, fetch a real page through a real Squid with
requests (sync) and httpx (async), released afterwards."""

from __future__ import annotations

import ssl

import httpx
import requests
from tests.client.conftest import LiveApi
from tests.conftest import TargetServer
from tests.health.conftest import PASSWORD, USER, ProxyProcess

from proxyfleet.client import AsyncClient, Client


def test_a_page_fetched_through_the_leased_proxy_with_requests(
    live_api: LiveApi, client_squid: ProxyProcess, target: TargetServer
) -> None:
    live_api.ready_proxy("sq", port=client_squid.port, username=USER, password=PASSWORD)
    with Client(live_api.url, live_api.client_token) as client:
        with client.lease(target="127.0.0.1", ttl=30) as lease:
            page = requests.get(
                target.url, proxies=lease.proxies, verify=target.ca_file, timeout=10
            )
            assert page.status_code == 200
            assert page.content
        assert client.get_lease(lease.lease_id).state == "released"


async def test_a_page_fetched_through_the_leased_proxy_with_httpx(
    live_api: LiveApi, client_squid: ProxyProcess, target: TargetServer
) -> None:
    live_api.ready_proxy("sq", port=client_squid.port, username=USER, password=PASSWORD)
    async with AsyncClient(live_api.url, live_api.client_token) as client:
        async with client.lease(ttl=30) as lease:
            async with httpx.AsyncClient(
                proxy=lease.httpx_proxy,
                verify=ssl.create_default_context(cafile=target.ca_file),
                timeout=10,
            ) as http:
                page = await http.get(target.url)
            assert page.status_code == 200
        assert (await client.get_lease(lease.lease_id)).state == "released"
