"""The real API process stops promptly on SIGTERM while event streams are open: a stream
never ends by itself, and a graceful stop that waited for it would never end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from tests.api.helpers import PROVIDERS_YAML
from tests.api.procs import api_process_handle, wait_ready

TOKEN = "cli-1-secret-for-tests"


async def test_sigterm_ends_open_event_streams_and_the_process(
    tmp_path: Path, redis_url: str, nats_url: str
) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    args = ["--redis-url", redis_url, "--nats-url", nats_url, "--providers-config", str(cfg)]
    env = {"PROXYFLEET_CLIENT_TOKENS": f"cli1:{TOKEN}"}
    log = tmp_path / "api.log"
    with api_process_handle(args, env, log) as (url, proc):
        await wait_ready(url, log)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http,
            http.stream("GET", "/v1/events") as first,
            http.stream("GET", "/v1/events", params={"probes": "true"}) as second,
        ):
            for r in (first, second):
                assert r.status_code == 200
                lines = r.aiter_lines()
                assert await anext(lines) == "event: ready"
            proc.terminate()
            # without the streams closed first, uvicorn waits for them forever: TimeoutExpired
            code = await asyncio.to_thread(proc.wait, 10)
        assert code == 0, log.read_text()[-3000:]
