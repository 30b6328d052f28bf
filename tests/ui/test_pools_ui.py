"""Pools and quarantine in the dashboard, in a real headless Chromium against the API (its
own uvicorn, real Redis and NATS; no pool controller: the tests write its status as it
would, members through the registry as it creates them): the panel's figures, its update
after a pool event and after the periodic refresh, a pool being deleted, quarantine and
release through the page, the API's message when it refuses, and a client token without
the panel."""

from __future__ import annotations

import re
import time
from typing import Any

import redis.asyncio as aioredis
from playwright.async_api import Locator, Page, Request, expect
from tests.api.helpers import ADMIN, CLIENT, OTHER, PROVIDER, Api, ready_proxy
from tests.ui.conftest import Tab, artifacts_dir

from proxyfleet.common.domain.pool_spec import Condition, PoolStatus
from proxyfleet.common.store import Fence, PoolStore

STATUS_TTL = 300.0
EVENT_REFRESH_MS = 4_000
"""A pool event's refetch comes within a few hundred ms: well inside the 5 s poll."""


def on_real_time(api: Api) -> None:
    """The API's clock moved to now, so that the page's ages read as ages."""
    api.clock.advance(time.time() - api.clock.now())


def status(now: float, **figures: Any) -> PoolStatus:
    """A status as the controller writes it every pass."""
    return PoolStatus(desired=3, observed_gen=1, updated_at=now, controller="test", **figures)


async def sign_in(page: Page, api: Api, token: str) -> None:
    await page.goto(f"{api.url}/ui")
    await page.get_by_label("API token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_test_id("who")).to_have_text(
        "admin token" if token == ADMIN else "client token"
    )


def pool_row(page: Page, name: str) -> Locator:
    return page.locator(f'[data-testid="pool-row"][data-pool="{name}"]')


def figure(row: Locator, field: str) -> Locator:
    return row.locator(f'[data-field="{field}"]')


def proxy_row(page: Page, proxy_id: str) -> Locator:
    return page.locator(f'[data-testid="proxy-row"][data-proxy-id="{proxy_id}"]')


async def test_the_pools_panel_shows_each_pool_and_follows_its_status(
    tab: Tab, api: Api, redis_client: aioredis.Redis
) -> None:
    page, shots = tab.page, artifacts_dir()
    on_real_time(api)
    store = PoolStore(redis_client, api.clock)
    spec = {"provider": PROVIDER, "size": 3, "autoscale": {"min": 1, "max": 6}}
    assert (await api.admin.put("/v1/pools/eu", json=spec)).status_code == 201
    assert (
        await api.admin.put("/v1/pools/us", json={"provider": OTHER, "size": 1})
    ).status_code == 201
    for pid in ("eu-1", "eu-2", "eu-3"):
        await ready_proxy(api, pid, pool="eu")
    now = api.clock.now()
    short = Condition(type="Ready", status=False, reason="Short", message="2 of 3 ready", since=now)
    await store.write_status(
        "eu",
        status(
            now, ready=2, leased=1, free=1, starting=1, draining=1, quarantined=0,
            oldest_age=754.0,
            conditions=[
                short,
                Condition(type="Progressing", status=True, reason="Changing", since=now),
                Condition(type="CapacityExceeded", status=False, reason="Room", since=now),
            ],
        ),
        STATUS_TTL,
    )  # fmt: skip

    await sign_in(page, api, ADMIN)
    eu, us = pool_row(page, "eu"), pool_row(page, "us")
    await expect(page.get_by_test_id("pool-count")).to_have_text("(2)")
    await expect(figure(eu, "owner")).to_have_text("api")
    got = {
        f: figure(eu, f) for f in ("desired", "ready", "leased", "free", "draining", "quarantined")
    }
    for field, want in zip(got, ("3", "2", "1", "1", "1", "0"), strict=True):
        await expect(got[field]).to_have_text(want)
    await expect(figure(eu, "oldest")).to_have_text("12m 34s")
    problems = eu.get_by_test_id("pool-condition")
    await expect(problems).to_have_count(1)  # Progressing is the pool at work, not a problem
    await expect(problems).to_have_text("not Ready: 2 of 3 ready")
    await expect(problems).to_have_attribute("data-type", "Ready")
    await expect(figure(us, "ready")).to_have_text("\u2014")
    await expect(us.get_by_test_id("pool-conditions")).to_have_text("no status yet")
    await expect(eu.get_by_test_id("pool-deleting")).to_be_hidden()
    await expect(page.get_by_test_id("stream-status")).to_have_attribute("data-state", "live")
    await page.screenshot(path=shots / "pools.png", full_page=True)

    # A scale-up (pool.scaled) with the status of the pass that made it: the event brings both.
    full = Condition(type="Ready", status=True, reason="Full", message="3 of 3 ready", since=now)
    capacity = Condition(
        type="CapacityExceeded", status=True, reason="NoRoom", since=now,
        message="1 members could not be created: apitest is full",
    )  # fmt: skip
    await store.write_status(
        "eu", status(now, ready=3, leased=1, free=2, oldest_age=760.0, conditions=[full, capacity]),
        STATUS_TTL,
    )  # fmt: skip
    record = (await api.admin.get("/v1/pools/eu")).json()
    assert await store.scale("eu", 4, "2 grants refused", record["gen"], Fence("", ""))
    await expect(figure(eu, "desired")).to_have_text("4", timeout=EVENT_REFRESH_MS)
    await expect(figure(eu, "ready")).to_have_text("3")
    await expect(figure(eu, "draining")).to_have_text("0")
    await expect(problems).to_have_count(1)
    await expect(problems).to_have_text(
        "CapacityExceeded: 1 members could not be created: apitest is full"
    )
    await expect(problems).to_have_attribute(
        "title", re.compile(r"^reason NoRoom, since \d\d:\d\d:\d\d$")
    )
    scaled = page.locator('[data-testid="event"][data-type="pool.scaled"]')
    await expect(scaled).to_have_count(1)
    await expect(scaled).to_contain_text("pool eu, size 3 \u2192 4, reason: 2 grants refused")

    # A later pass writes a status without any event: the periodic refresh shows it.
    await store.write_status(
        "eu", status(now, ready=4, leased=2, free=2, quarantined=1, oldest_age=3700.0,
                     conditions=[full]),
        STATUS_TTL,
    )  # fmt: skip
    await expect(figure(eu, "quarantined")).to_have_text("1")
    await expect(figure(eu, "oldest")).to_have_text("1h 01m")
    await expect(eu.get_by_test_id("pool-conditions")).to_have_text("ok")

    # A pool being deleted is marked so (no controller here to finish the delete).
    assert (await api.admin.delete("/v1/pools/us")).status_code == 202
    await expect(us.get_by_test_id("pool-deleting")).to_be_visible(timeout=EVENT_REFRESH_MS)
    await expect(us).to_have_attribute("data-deleting", "true")
    await expect(eu).to_have_attribute("data-deleting", "false")


async def test_quarantine_and_release_through_the_page(tab: Tab, api: Api) -> None:
    page, shots = tab.page, artifacts_dir()
    on_real_time(api)
    await ready_proxy(api, "eu-1", pool="eu")
    await ready_proxy(api, "lone")
    await sign_in(page, api, ADMIN)
    row = proxy_row(page, "eu-1")
    await expect(row.get_by_test_id("pool")).to_have_text("eu")
    await expect(proxy_row(page, "lone").get_by_test_id("pool")).to_have_text("")
    await expect(row.get_by_test_id("withheld")).to_be_hidden()
    await expect(row.get_by_test_id("release")).to_be_hidden()
    await expect(page.get_by_test_id("stream-status")).to_have_attribute("data-state", "live")

    await page.get_by_role("button", name="Quarantine proxy eu-1").click()
    dialog = page.get_by_role("dialog", name="Quarantine proxy eu-1")
    await expect(dialog).to_be_visible()
    error = dialog.get_by_test_id("quarantine-error")
    confirm = dialog.get_by_role("button", name="Quarantine", exact=True)
    await confirm.click()  # no reason: asked for one, nothing sent
    await expect(error).to_contain_text("Say why")
    # a reason the API refuses (over 200 characters): its message, and the dialog stays
    await dialog.get_by_label("Reason").fill("x" * 201)
    await confirm.click()
    await expect(error).to_contain_text("Quarantine of eu-1 failed: ")
    await expect(error).to_contain_text("(HTTP 400 invalid_input)")
    assert (await api.admin.get("/v1/proxies/eu-1")).json()["withheld"] == ""

    reason = "blocked by <b>shop</b>"
    await dialog.get_by_label("Reason").fill(reason)
    await confirm.click()
    await expect(dialog).to_be_hidden()
    await expect(row.get_by_test_id("withheld")).to_have_text("quarantined")
    await expect(row.get_by_test_id("withheld-reason")).to_have_text(reason)  # text, not markup
    await expect(row).to_have_attribute("data-withheld", "quarantined")
    await expect(row.get_by_test_id("quarantine")).to_be_hidden()
    proxy = (await api.admin.get("/v1/proxies/eu-1")).json()
    assert (proxy["withheld"], proxy["withheld_reason"]) == ("quarantined", reason)
    event = page.locator(
        '[data-testid="event"][data-type="proxy.quarantined"][data-proxy-id="eu-1"]'
    )
    await expect(event).to_contain_text(f"pool eu, by tests-admin, reason: {reason}")
    await page.screenshot(path=shots / "quarantined.png", full_page=True)

    await row.get_by_role("button", name="Release proxy eu-1 from quarantine").click()
    await expect(row.get_by_test_id("withheld")).to_be_hidden()
    await expect(row.get_by_test_id("quarantine")).to_be_visible()
    await expect(page.get_by_test_id("action-error")).to_be_hidden()
    assert (await api.admin.get("/v1/proxies/eu-1")).json()["withheld"] == ""
    await expect(
        page.locator('[data-testid="event"][data-type="proxy.unquarantined"][data-proxy-id="eu-1"]')
    ).to_have_count(1)


async def test_a_refused_release_shows_the_apis_message(tab: Tab, api: Api) -> None:
    """Released elsewhere while this page, its stream cut, still offers Release: the API's
    409 is on the page."""
    page = tab.page
    await ready_proxy(api, "q1")
    r = await api.admin.post("/v1/proxies/q1/quarantine", json={"reason": "inspect"})
    assert r.status_code == 200, r.text
    await page.route("**/v1/events**", lambda route: route.abort())
    await sign_in(page, api, ADMIN)
    release = proxy_row(page, "q1").get_by_role("button", name="Release proxy q1 from quarantine")
    await expect(release).to_be_visible()
    assert (await api.admin.delete("/v1/proxies/q1/quarantine")).status_code == 200
    await release.click()
    action_error = page.get_by_test_id("action-error")
    await expect(action_error).to_have_text(
        "Release of q1 failed: proxy q1 is not quarantined (HTTP 409 proxy_not_quarantined)"
    )


async def test_a_client_token_has_no_pools_panel(tab: Tab, api: Api) -> None:
    page = tab.page
    assert (
        await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 1})
    ).status_code == 201
    asked: list[str] = []

    def on_request(request: Request) -> None:
        if "/v1/pools" in request.url:
            asked.append(request.url)

    page.on("request", on_request)
    await sign_in(page, api, CLIENT)
    await expect(page.get_by_test_id("stream-status")).to_have_attribute("data-state", "live")
    await expect(page.get_by_test_id("pools-section")).to_be_hidden()
    await expect(page.get_by_test_id("pool-row")).to_have_count(0)
    # a pool event reaches a client token's stream too: still nothing asked of /v1/pools
    assert (
        await api.admin.put("/v1/pools/eu", json={"provider": PROVIDER, "size": 2})
    ).status_code == 200
    await expect(page.locator('[data-testid="event"][data-type="pool.applied"]')).to_have_count(1)
    assert asked == []

    # signed out and in again as an admin: the panel is back
    await page.get_by_role("button", name="Sign out").click()
    await page.get_by_label("API token").fill(ADMIN)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_test_id("pools-section")).to_be_visible()
    await expect(pool_row(page, "eu")).to_have_count(1)
