"""The dashboard in a real headless Chromium against the whole system (every service a
process, local Squids, real probes): sign in, create three proxies, watch them go ready
without reloading, see a lease granted through the API count down, follow the events,
delete through the page, and read the API's own message when it refuses."""

from __future__ import annotations

import asyncio
import re
import secrets
import signal
from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import Locator, Page, expect
from tests.ui.conftest import Tab, artifacts_dir

from proxyfleet.devstack.stack import Stack

pytestmark = pytest.mark.timeout(240)

READY_WITHIN_MS = 60_000
"""Create to ready: provisioning a Squid, then health's real CONNECT probes."""


@pytest.fixture
async def admin(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=stack.api_url, headers={"Authorization": f"Bearer {stack.admin_token}"}
    ) as c:
        yield c


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=stack.api_url, headers={"Authorization": f"Bearer {stack.client_token}"}
    ) as c:
        yield c


async def sign_in(page: Page, token: str) -> None:
    await page.get_by_label("API token").fill(token)
    await page.get_by_role("button", name="Sign in").click()


def proxy_row(page: Page, proxy_id: str) -> Locator:
    return page.locator(f'[data-testid="proxy-row"][data-proxy-id="{proxy_id}"]')


def seconds_left(text: str) -> int:
    m = re.fullmatch(r"(?:(\d+)m )?(\d+)s", text)
    assert m, text
    return int(m.group(1) or 0) * 60 + int(m.group(2))


async def test_the_dashboard_follows_the_fleet_live(
    tab: Tab, stack: Stack, admin: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    page, shots = tab.page, artifacts_dir()
    await page.goto(f"{stack.api_url}/ui")

    # a wrong token: the API's message, and still the sign-in form
    await sign_in(page, f"not-a-token-{secrets.token_hex(4)}")
    await expect(page.get_by_test_id("login-error")).to_have_text(
        "Sign-in failed: unknown token (HTTP 401 unauthorized)"
    )
    await expect(page.locator("#dashboard")).to_be_hidden()
    await page.screenshot(path=shots / "wrong-token.png")

    await sign_in(page, stack.admin_token)
    await expect(page.get_by_test_id("who")).to_have_text("admin token")
    await expect(page.get_by_test_id("stream-status")).to_have_attribute("data-state", "live")
    await page.evaluate("window.__sameDocument = true")  # gone if anything reloads the page

    # three proxies through the form; they go ready as the stream tells
    await page.get_by_label("Provider").select_option("local")
    await page.get_by_label("Count").fill("3")
    await page.get_by_role("button", name="Create").click()
    result = page.get_by_test_id("create-result")
    await expect(result).to_contain_text("Created 3: ")
    ids = (await result.inner_text()).split(": ", 1)[1].split(", ")
    assert len(ids) == 3, ids
    for proxy_id in ids:
        await expect(proxy_row(page, proxy_id)).to_have_attribute(
            "data-phase", "ready", timeout=READY_WITHIN_MS
        )
    for proxy_id in ids:
        row = proxy_row(page, proxy_id)
        # latency from the probe stream: a figure, a sparkline of several probes, the egress IP
        await expect(row.get_by_test_id("latency")).to_have_text(re.compile(r"^\d+(\.\d)? ms$"))
        await expect(row.locator("svg.spark")).to_have_attribute(
            "data-samples", re.compile(r"^([3-9]|\d\d+)$")
        )
        await expect(row.get_by_test_id("egress")).to_have_text(
            re.compile(r"^\d+\.\d+\.\d+\.\d+$|:")
        )
        await expect(
            page.locator(
                f'[data-testid="event"][data-type="proxy.ready"][data-proxy-id="{proxy_id}"]'
            )
        ).to_have_count(1)
    ready_total = sum(
        int(t)
        for t in await page.locator(
            '[data-testid="fleet-row"] [data-phase="ready"]'
        ).all_inner_texts()
    )
    assert ready_total >= 3

    # a lease granted through the API, its holder written as markup: shown as text, counting down
    holder = '<img src=x onerror="window.__owned = 1">ui-test'
    r = await client.post(
        "/v1/leases",
        json={"ttl": 120, "holder": holder, "target": "example.com", "proxy_id": ids[0]},
    )
    assert r.status_code == 201, r.text
    lease = r.json()
    lease_row = page.locator(f'[data-testid="lease-row"][data-lease-id="{lease["lease_id"]}"]')
    await expect(lease_row).to_be_visible()
    await expect(lease_row.locator("td").nth(1)).to_have_text(holder)
    await expect(lease_row.locator("img")).to_have_count(0)
    first = seconds_left(await lease_row.get_by_test_id("expires-in").inner_text())
    assert 100 <= first <= 120, first
    await expect(lease_row.get_by_test_id("expires-in")).not_to_have_text(
        re.compile(rf"^{first // 60}m {first % 60:02d}s$"), timeout=5_000
    )
    later = seconds_left(await lease_row.get_by_test_id("expires-in").inner_text())
    assert later < first
    await expect(proxy_row(page, ids[0]).get_by_test_id("leased")).to_have_text("leased")
    await expect(
        page.locator(f'[data-testid="event"][data-type="lease.granted"][data-proxy-id="{ids[0]}"]')
    ).to_have_count(1)
    await page.screenshot(path=shots / "dashboard.png", full_page=True)

    # the API refuses to delete a leased proxy: its message is on the page
    leased = proxy_row(page, ids[0]).get_by_test_id("delete")
    await leased.click()
    await expect(leased).to_have_text("Confirm delete")
    await leased.click()
    await expect(page.get_by_test_id("action-error")).to_contain_text(f"proxy {ids[0]} is leased")
    await expect(page.get_by_test_id("action-error")).to_contain_text("HTTP 409 proxy_leased")

    # a free one goes: deleting, then out of the table once deleted
    button = proxy_row(page, ids[1]).get_by_test_id("delete")
    await button.click()
    await button.click()
    await expect(proxy_row(page, ids[1])).to_have_count(0, timeout=30_000)
    phase = (await admin.get(f"/v1/proxies/{ids[1]}")).json()["phase"]
    assert phase in {"deleting", "deleted"}

    # released through the API: the lease leaves the table
    r = await client.post(f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]})
    assert r.status_code == 200, r.text
    await expect(lease_row).to_have_count(0)
    await expect(
        page.locator(f'[data-testid="event"][data-type="lease.released"][data-proxy-id="{ids[0]}"]')
    ).to_have_count(1)

    assert await page.evaluate("window.__sameDocument") is True
    assert await page.evaluate("window.__owned") is None
    await page.screenshot(path=shots / "after-delete.png", full_page=True)
    for proxy_id in (ids[0], ids[2]):  # leave the module's stack as it was
        await admin.delete(f"/v1/proxies/{proxy_id}", params={"force": "true"})


async def test_the_token_stays_in_the_tab_and_a_client_token_sees_counts_only(
    tab: Tab, stack: Stack
) -> None:
    page = tab.page
    await page.goto(f"{stack.api_url}/ui")
    await sign_in(page, stack.client_token)
    await expect(page.get_by_test_id("who")).to_have_text("client token")
    await expect(page.get_by_test_id("create-section")).to_be_hidden()
    await expect(page.get_by_test_id("proxies-note")).to_contain_text("needs an admin token")
    await expect(page.locator('[data-testid="fleet-row"][data-provider="local"]')).to_have_count(1)
    await expect(page.get_by_test_id("stream-status")).to_have_attribute("data-state", "live")

    # a reload keeps the session (sessionStorage); signing out forgets the token
    await page.reload()
    await expect(page.get_by_test_id("who")).to_have_text("client token")
    assert await page.evaluate("sessionStorage.length") == 1
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_label("API token")).to_be_visible()
    assert await page.evaluate("sessionStorage.length") == 0
    await page.reload()
    await expect(page.get_by_label("API token")).to_be_visible()
    await expect(page.locator("#dashboard")).to_be_hidden()


async def test_the_stream_comes_back_after_the_api_drops_it(
    tab: Tab, stack: Stack, admin: httpx.AsyncClient
) -> None:
    page = tab.page
    await page.goto(f"{stack.api_url}/ui")
    await sign_in(page, stack.admin_token)
    status = page.get_by_test_id("stream-status")
    await expect(status).to_have_attribute("data-state", "live")

    api = stack.processes["api"]
    api.send_signal(signal.SIGKILL)  # the connection drops; no goodbye
    await asyncio.to_thread(api.wait, 10)
    try:
        await expect(status).to_have_attribute("data-state", "retrying")
        await expect(status).to_contain_text("retrying in")
    finally:  # the module's other tests need it back
        stack.start_service("api", stack.commands["api"])
        await asyncio.to_thread(stack.wait_ready, 30)
    # backoff: 1, 2, 4, 8 s... the API is back within seconds, so is the stream
    await expect(status).to_have_attribute("data-state", "live", timeout=40_000)
    await expect(page.get_by_test_id("event-note").first).to_have_text(
        re.compile("event stream reconnected")
    )

    # and it carries events again: a proxy made through the API shows up by itself
    r = await admin.post("/v1/proxies", json={"provider": "local", "count": 1})
    assert r.status_code == 202, r.text
    proxy_id = r.json()["items"][0]["id"]
    await expect(proxy_row(page, proxy_id)).to_have_count(1, timeout=10_000)
    await expect(
        page.locator(
            f'[data-testid="event"][data-type="proxy.pending"][data-proxy-id="{proxy_id}"]'
        )
    ).to_have_count(1)
    await admin.delete(f"/v1/proxies/{proxy_id}", params={"force": "true"})
