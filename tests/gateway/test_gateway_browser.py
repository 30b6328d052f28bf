"""Chromium through the gateway with the proxy settings docs/gateway.md gives Playwright:
it answers the gateway's 407 challenge with the username and token, and its tunnel rides
on the session's lease. Through the SOCKS5 listener it cannot authenticate: refused."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import ProxySettings, async_playwright
from prometheus_client import REGISTRY
from tests.api.helpers import CLIENT, CLIENT_NAME
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, require_chromium

from proxyfleet.common.store import LeaseStore
from proxyfleet.common.store.sessions import SessionStore
from proxyfleet.devstack.servers import free_port


async def test_playwright_fetches_through_a_session(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    redis_client: aioredis.Redis,
    lease_store: LeaseStore,
) -> None:
    require_chromium()
    gw = await start_gateway()
    proxy: ProxySettings = {
        "server": f"http://127.0.0.1:{gw.port}",
        "username": "crawler-session-abc",
        "password": CLIENT,
        "bypass": "<-loopback>",  # Chromium sends 127.0.0.1 direct unless told otherwise
    }
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, proxy=proxy, timeout=60_000
        )
        try:
            context = await browser.new_context(ignore_https_errors=True)  # the target's CA
            page = await context.new_page()
            answer = await page.goto(target.url, timeout=30_000)
            assert answer is not None
            assert answer.status == 200
            assert '"ip"' in await page.content()
        finally:
            await browser.close()
    bound = await SessionStore(redis_client).get(CLIENT_NAME, "abc")
    assert bound is not None  # the username's session, bound to a lease of the token's
    found = await lease_store.get(bound.lease_id)
    assert found is not None
    lease, state = found
    assert (lease.client, state) == (CLIENT_NAME, "active")
    assert lease.proxy_id in fleet


async def test_chromium_offers_no_socks5_auth_and_is_refused_cleanly(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    """Chromium's SOCKS5 client offers only "no authentication" (and Playwright refuses
    SOCKS5 credentials outright): the gateway answers "no acceptable method" and closes,
    and the page fails to load; nothing is leased. Browsers use the HTTP listener."""
    require_chromium()
    gw = await start_gateway(socks_port=free_port())
    port = gw.assembly.gateway.socks_port
    before = REGISTRY.get_sample_value(
        "proxyfleet_gateway_socks5_total", {"outcome": "unauthorized", "reply": "no_method"}
    )
    async with async_playwright() as pw:
        with_auth: ProxySettings = {
            "server": f"socks5://127.0.0.1:{port}", "username": "crawler", "password": CLIENT
        }  # fmt: skip
        with pytest.raises(PlaywrightError, match="socks5 proxy authentication"):
            await pw.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, proxy=with_auth, timeout=60_000
            )
        proxy: ProxySettings = {"server": f"socks5://127.0.0.1:{port}", "bypass": "<-loopback>"}
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, proxy=proxy, timeout=60_000
        )
        try:
            page = await (await browser.new_context(ignore_https_errors=True)).new_page()
            with pytest.raises(PlaywrightError, match="ERR_SOCKS_CONNECTION_FAILED"):
                await page.goto(target.url, timeout=30_000)
        finally:
            await browser.close()
    after = REGISTRY.get_sample_value(
        "proxyfleet_gateway_socks5_total", {"outcome": "unauthorized", "reply": "no_method"}
    )
    assert (after or 0) > (before or 0)
    assert not gw.tunnels.holds()
