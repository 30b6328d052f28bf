"""The services' own /healthz /readyz /metrics server: GET and HEAD only, 405 with Allow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from proxyfleet.common.host.http import serve_health_and_metrics
from proxyfleet.devstack.servers import free_port


@pytest.fixture
async def health_url() -> AsyncIterator[str]:
    port, stop = free_port(), asyncio.Event()
    task = asyncio.create_task(
        serve_health_and_metrics("127.0.0.1", port, {"own": lambda: True}, stop)
    )
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=5) as http:
        for _ in range(200):  # bounded: the server is up within a few loop turns
            try:
                await http.get("/healthz")
                break
            except httpx.TransportError:
                await asyncio.sleep(0.01)
    yield url
    stop.set()
    await task


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
async def test_other_methods_get_405_with_allow(health_url: str, path: str) -> None:
    async with httpx.AsyncClient(base_url=health_url, timeout=5) as http:
        assert (await http.get(path)).status_code == 200
        head = await http.head(path)
        assert head.status_code == 200
        assert head.content == b""
        for method in ("POST", "PUT", "DELETE"):
            r = await http.request(method, path)
            assert r.status_code == 405, method
            assert r.headers["allow"] == "GET, HEAD"
        assert (await http.post("/nothing")).status_code == 404
