"""Dashboard fixtures: Debian's Chromium driven by Playwright (its bundled driver, never a
browser download), a fresh context per test, and where screenshots go; the page alone
(`ui_url`) for the tests of its script modules. The API fixtures of tests/api and the
whole-system `stack` of tests/e2e are reused as they are."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from litestar import Litestar
from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright, expect
from tests.api.conftest import api, start_api  # noqa: F401 (fixtures)
from tests.e2e.conftest import stack  # noqa: F401 (fixture)

from proxyfleet.api.ui.controller import ui_router
from proxyfleet.devstack.servers import free_port

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's package (`make browser-packages`)."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # tests run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # without these Chromium calls home at start and stalls on a machine without internet
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# The page waits on real work (a Squid booting, probes every half second): longer than
# Playwright's default of 5 s for each expectation.
expect.set_options(timeout=15_000)


def artifacts_dir() -> Path:
    """$PROXYFLEET_ARTIFACTS/ui, else test-artifacts/ui at the root (gitignored)."""
    root = os.environ.get("PROXYFLEET_ARTIFACTS") or Path(__file__).parents[2] / "test-artifacts"
    path = Path(root) / "ui"
    path.mkdir(parents=True, exist_ok=True)
    return path


def require_chromium() -> None:
    if not CHROMIUM.exists():  # a failure, not a skip: `make test` installs it
        pytest.fail(f"{CHROMIUM} is missing: `make browser-packages` installs Debian's chromium")


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium for the session; Playwright gives it a fresh temporary profile."""
    require_chromium()
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield chromium
        finally:
            await chromium.close()


@dataclass
class Tab:
    """A page in a browser context of its own (its own sessionStorage)."""

    page: Page
    uncaught: list[str] = field(default_factory=list)
    """Exceptions no script caught: the test fails at teardown when there is one."""
    console_errors: list[str] = field(default_factory=list)
    """Console errors (a refused request logs one: some tests expect them)."""


@pytest.fixture
async def tab(browser: Browser) -> AsyncIterator[Tab]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    t = Tab(await context.new_page())
    t.page.on("pageerror", lambda exc: t.uncaught.append(str(exc)))
    t.page.on("console", lambda m: _console(t, m))
    try:
        yield t
    finally:
        await context.close()
    assert not t.uncaught, t.uncaught


def _console(t: Tab, message: ConsoleMessage) -> None:
    if message.type == "error":
        t.console_errors.append(message.text)


@pytest.fixture(scope="module")
async def ui_url() -> AsyncIterator[str]:
    """The API's /ui routes alone, served by uvicorn in this loop (no backends: for tests of
    the page's script modules, which call no API)."""
    port = free_port()
    app = Litestar(route_handlers=[ui_router()], logging_config=None)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    for _ in range(500):  # 5 s at most
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


async def run_module(tab: Tab, url: str, module: str, body: str) -> Any:
    """Evaluates `body` (a function of the module `m`) in the page, after loading /ui."""
    if not tab.page.url.startswith(url):
        await tab.page.goto(f"{url}/ui")
    script = f"async () => {{ const m = await import('/ui/assets/js/{module}'); {body} }}"
    return await tab.page.evaluate(script)
