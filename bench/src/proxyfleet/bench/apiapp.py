"""The API as the benchmark serves it: the production app plus the two baseline routes.

The baselines are not part of the API package: this module builds the app with the API's
own `create_app` and mounts them beside its routes, behind the same bearer-token guard
and with the same client scope as a lease request, so the benchmark's ratios compare the
lease routes with the least a route can do:

- GET /bench/json: a trivial JSON answer;
- POST /bench/evalsha: exactly one EVALSHA of a one-line script through a pipelined
  `ScriptMux`, the client the lease scripts go through (a connection of its own, opened
  and closed with the app's backends; the baselines run alone, so nothing shares it).

`python -m proxyfleet.bench.apiapp --port N ...` serves it the way `proxyfleet-api`
serves the API (one uvicorn worker, uvloop, httptools, the same GC tuning); the client
token (`name:secret`) comes from the environment (PROXYFLEET_CLIENT_TOKENS), not the command
line.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import msgspec
import uvicorn
from litestar import Controller, Litestar, Router, get, post
from litestar.di import NamedDependency, Provide
from litestar.status_codes import HTTP_200_OK

from proxyfleet.api.app import create_app, token_auth
from proxyfleet.api.deps import AppDeps, Backends, Connector, open_backends
from proxyfleet.api.gctune import tune_gc
from proxyfleet.api.http.auth import Scope
from proxyfleet.api.settings import ApiSettings
from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.providers import ProvidersConfig, load_providers_config
from proxyfleet.common.store import LuaScript, ScriptMux, connect_redis

BENCH_SCRIPT = "return redis.call('INCR', KEYS[1])"
"""The one-EVALSHA baseline of POST /bench/evalsha: a small script touching one key."""


class BenchJson(msgspec.Struct, kw_only=True):
    ok: bool


class BenchCount(msgspec.Struct, kw_only=True):
    n: int


_OK = BenchJson(ok=True)


async def _not_open() -> int:
    raise RuntimeError("the bench script runs only while the app's backends are open")


@dataclass
class BenchScript:
    """One EVALSHA of BENCH_SCRIPT; `run` is set while the app's backends are open."""

    run: Callable[[], Awaitable[int]] = _not_open


class BenchController(Controller):
    path = "/bench"
    tags = ["bench"]
    include_in_schema = False
    opt = {"scope": Scope.CLIENT}

    @get("/json")
    async def bench_json(self) -> BenchJson:
        return _OK

    @post("/evalsha", status_code=HTTP_200_OK)
    async def bench_evalsha(self, bench_script: NamedDependency[BenchScript]) -> BenchCount:
        return BenchCount(n=await bench_script.run())


def with_bench_script(connect: Connector, script: BenchScript) -> Connector:
    """`connect`, plus a Redis connection and ScriptMux for `script` for as long."""

    @asynccontextmanager
    async def connect_with_script(
        settings: ApiSettings, clock: Clock, providers: ProvidersConfig
    ) -> AsyncIterator[Backends]:
        async with connect(settings, clock, providers) as backends:
            redis = connect_redis(settings.common.redis_url)
            mux = ScriptMux.from_client(redis)
            lua = LuaScript(BENCH_SCRIPT)
            keys = [f"{settings.common.namespace}:bench:evalsha"]

            async def run() -> int:
                return int(await mux.run(lua, keys, ()))

            script.run = run
            try:
                yield backends
            finally:
                script.run = _not_open
                await mux.aclose()
                await redis.aclose()

    return connect_with_script


def create_bench_app(
    settings: ApiSettings, providers: ProvidersConfig, clock: Clock | None = None
) -> Litestar:
    """The production app (create_app) with the baseline routes mounted."""
    script = BenchScript()
    deps = AppDeps(
        providers=providers,
        clock=clock or SystemClock(),
        connect=with_bench_script(open_backends, script),
    )
    app = create_app(settings, deps)

    async def provide_script() -> BenchScript:
        return script

    app.register(
        Router(
            path="/",
            guards=[token_auth(settings).guard],
            route_handlers=[BenchController],
            dependencies={"bench_script": Provide(provide_script)},
        )
    )
    return app


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m proxyfleet.bench.apiapp")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cooldown", type=float, default=0.0)
    parser.add_argument("--max-probe-age", type=float, default=20.0)
    parser.add_argument("--nats-url", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--providers-config", required=True)
    parser.add_argument("--installation-id", default="bench")
    parser.add_argument("--log-level", default="info")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    tokens = os.environ.get("PROXYFLEET_CLIENT_TOKENS", "")
    settings = ApiSettings(
        common=CommonSettings(
            nats_url=args.nats_url,
            redis_url=args.redis_url,
            installation_id=args.installation_id,
            providers_config=args.providers_config,
            log_level=args.log_level,
        ),
        host=args.host,
        port=args.port,
        client_tokens=tuple(t for t in tokens.split(",") if t),
        cooldown=args.cooldown,
        max_probe_age=args.max_probe_age,
    )
    configure_logging("api", args.log_level, "json")
    app = create_bench_app(settings, load_providers_config(args.providers_config))
    tune_gc()
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        log_level=args.log_level,
        access_log=False,
        server_header=False,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
