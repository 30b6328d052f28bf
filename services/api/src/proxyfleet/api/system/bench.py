"""Benchmark baselines, served only with --bench-routes (ApiSettings.bench_routes).

Same server, same worker, same auth as a lease request (client scope), so the benchmark's
ratios compare the lease routes with the least a route can do:
- GET /bench/json: a trivial JSON answer;
- POST /bench/evalsha: exactly one EVALSHA of a small script, through the same Redis client.
"""

from __future__ import annotations

import msgspec
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.status_codes import HTTP_200_OK

from proxyfleet.api.auth import Scope
from proxyfleet.api.container import Services


class BenchJson(msgspec.Struct, kw_only=True):
    ok: bool


class BenchCount(msgspec.Struct, kw_only=True):
    n: int


_OK = BenchJson(ok=True)


class BenchController(Controller):
    path = "/bench"
    tags = ["bench"]
    include_in_schema = False
    opt = {"scope": Scope.CLIENT}

    @get("/json")
    async def bench_json(self) -> BenchJson:
        return _OK

    @post("/evalsha", status_code=HTTP_200_OK)
    async def bench_evalsha(self, services: NamedDependency[Services]) -> BenchCount:
        return BenchCount(n=await services.backends.bench_evalsha())
