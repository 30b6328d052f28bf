"""The bench's app: the production API plus the baseline routes, which the API alone lacks."""

from __future__ import annotations

import httpx
import redis.asyncio as aioredis
from tests.api.helpers import ADMIN, CLIENT, api_settings, providers_config
from tests.api.serving import serve

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.bench.apiapp import create_bench_app
from proxyfleet.common.core.clock import ManualClock


async def test_the_bench_app_serves_the_baselines_behind_the_client_token(
    redis_url: str, nats_url: str, redis_client: aioredis.Redis
) -> None:
    settings = api_settings(redis_url, nats_url)
    url, stop = await serve(create_bench_app(settings, providers_config(), ManualClock()))
    try:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            client = {"Authorization": f"Bearer {CLIENT}"}
            r = await http.get("/bench/json", headers=client)
            assert (r.status_code, r.json()) == (200, {"ok": True})
            first = (await http.post("/bench/evalsha", headers=client)).json()["n"]
            second = (await http.post("/bench/evalsha", headers=client)).json()["n"]
            assert second == first + 1
            assert int(await redis_client.get("pf:bench:evalsha") or 0) == second
            assert (await http.get("/bench/json")).status_code == 401
            # the API's own routes are all there
            admin = {"Authorization": f"Bearer {ADMIN}"}
            assert (await http.get("/v1/proxies", headers=admin)).status_code == 200
            schema = (await http.get("/schema/openapi.json")).json()
            assert not [p for p in schema["paths"] if p.startswith("/bench")]
    finally:
        await stop()


async def test_the_production_app_has_no_bench_routes(redis_url: str, nats_url: str) -> None:
    app = create_app(api_settings(redis_url, nats_url), AppDeps(providers=providers_config()))
    assert not [r.path for r in app.routes if r.path.startswith("/bench")]
