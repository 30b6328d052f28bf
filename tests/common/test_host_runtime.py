"""The service host's runtime, in process: signals while connecting, a failing component
stops the others (exit 1), closers in order, readiness per backend, ConfigError -> 2."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass

import httpx
import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host import Check, Context, Parts, Service
from proxyfleet.common.host.http import serve_health_and_metrics
from proxyfleet.common.host.runtime import serve
from proxyfleet.common.host.spec import ReadyCheck
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.providers import ProvidersConfig, parse_providers_config
from proxyfleet.devstack.servers import free_port

PROVIDERS = parse_providers_config(
    "providers:\n  - {name: p1, type: local, zones: [z], local: {}}\n", "providers.yaml"
)


@dataclass(frozen=True, slots=True)
class HostedSettings:
    metrics_host: str = "127.0.0.1"
    """Address of the health server."""
    metrics_port: int = 0
    """Port of the health server (0: none)."""


async def _nothing(_: Context[HostedSettings]) -> Parts:
    return Parts(components={})


def _service(
    build: object = _nothing, *, nats: bool = False, redis: bool = False
) -> Service[HostedSettings]:
    return Service(
        name="hosted",
        summary="A test service.",
        settings=HostedSettings,
        build=build,  # type: ignore[arg-type]
        needs_nats=nats,
        needs_redis=redis,
    )


async def _serve(
    service: Service[HostedSettings],
    settings: HostedSettings | None = None,
    common: CommonSettings | None = None,
    providers: ProvidersConfig = PROVIDERS,
) -> int:
    return await serve(service, common or CommonSettings(), settings or HostedSettings(), providers)


async def test_sigterm_while_waiting_for_nats_stops_at_once_with_exit_0() -> None:
    common = CommonSettings(nats_url=f"nats://127.0.0.1:{free_port()}")  # nothing listens
    asyncio.get_running_loop().call_later(0.5, os.kill, os.getpid(), signal.SIGTERM)
    async with asyncio.timeout(10):
        assert await _serve(_service(nats=True), common=common) == 0


async def test_a_connect_timeout_gives_up_with_exit_1() -> None:
    common = CommonSettings(nats_url=f"nats://127.0.0.1:{free_port()}")
    service = Service(
        name="hosted",
        summary="",
        settings=HostedSettings,
        build=_nothing,
        connect_timeout=lambda _: 0.5,
    )
    async with asyncio.timeout(10):
        assert await _serve(service, common=common) == 1


async def test_sigint_stops_every_component_then_closers_run_in_order() -> None:
    events: list[str] = []

    async def build(ctx: Context[HostedSettings]) -> Parts:
        async def worker(stop: asyncio.Event) -> None:
            events.append("worker started")
            asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
            await stop.wait()
            events.append("worker stopped")

        async def close(name: str) -> None:
            events.append(f"closed {name}")

        return Parts(
            components={"worker": worker},
            close=[lambda: close("first"), lambda: close("second")],
        )

    async with asyncio.timeout(10):
        assert await _serve(_service(build)) == 0
    assert events == ["worker started", "worker stopped", "closed first", "closed second"]


async def test_a_failing_component_stops_the_others_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("hosted", "info", "json")
    stopped_cleanly: list[bool] = []

    async def build(ctx: Context[HostedSettings]) -> Parts:
        async def steady(stop: asyncio.Event) -> None:
            await stop.wait()
            stopped_cleanly.append(True)

        async def broken(stop: asyncio.Event) -> None:
            await asyncio.sleep(0.05)
            raise RuntimeError("disk on fire")

        return Parts(components={"steady": steady, "broken": broken})

    async with asyncio.timeout(10):
        assert await _serve(_service(build)) == 1
    assert stopped_cleanly == [True]
    out = capsys.readouterr().out
    assert '"event": "service.component_failed"' in out
    assert '"component": "broken"' in out
    assert "disk on fire" in out


async def test_a_config_error_in_the_build_exits_2_with_the_service_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def build(ctx: Context[HostedSettings]) -> Parts:
        raise ConfigError("providers.yaml: key providers[0].local.engine: expected squid")

    assert await _serve(_service(build)) == 2
    err = capsys.readouterr().err
    assert (
        err == "proxyfleet-hosted: providers.yaml: key providers[0].local.engine: expected squid\n"
    )


async def test_readyz_has_a_check_per_backend_and_the_service_s_own(
    nats_url: str, redis_url: str
) -> None:
    own_ready = asyncio.Event()
    port = free_port()

    async def build(ctx: Context[HostedSettings]) -> Parts:
        assert ctx.nats.is_connected
        assert ctx.redis is not None  # a client; whether Redis answers is /readyz's business

        async def mine() -> bool:
            return own_ready.is_set()

        return Parts(components={}, ready={"mine": mine})

    async def probe(common: CommonSettings) -> list[tuple[int, str]]:
        answers: list[tuple[int, str]] = []

        async def drive(stop: asyncio.Event) -> None:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                for _ in range(100):
                    try:
                        await http.get("/healthz")
                        break
                    except httpx.TransportError:
                        await asyncio.sleep(0.05)
                for flip in (False, True):
                    if flip:
                        own_ready.set()
                    res = await http.get("/readyz")
                    answers.append((res.status_code, res.text))
            stop.set()

        async def build_with_driver(ctx: Context[HostedSettings]) -> Parts:
            parts = await build(ctx)
            parts.components["driver"] = drive
            return parts

        service = _service(build_with_driver, nats=True, redis=True)
        async with asyncio.timeout(20):
            assert await _serve(service, HostedSettings(metrics_port=port), common) == 0
        return answers

    good = CommonSettings(nats_url=nats_url, redis_url=redis_url)
    assert await probe(good) == [
        (503, "nats: ok\nredis: ok\nmine: not ready\n"),
        (200, "nats: ok\nredis: ok\nmine: ok\n"),
    ]


async def test_readyz_answers_503_while_a_backend_is_still_being_tried(
    nats_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Redis closed at start: the health server is up before the connects finish, says
    which backend is missing, the build waits; SIGTERM ends it with exit 0."""
    configure_logging("hosted", "info", "json")
    port = free_port()
    built: list[bool] = []

    async def build(ctx: Context[HostedSettings]) -> Parts:
        built.append(True)
        return Parts(components={})

    dead_redis = CommonSettings(nats_url=nats_url, redis_url=f"redis://127.0.0.1:{free_port()}/0")
    serving = asyncio.create_task(
        _serve(
            _service(build, nats=True, redis=True), HostedSettings(metrics_port=port), dead_redis
        )
    )
    answer: tuple[int, str] = (0, "")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        for _ in range(200):
            try:
                res = await http.get("/readyz")
            except httpx.TransportError:
                await asyncio.sleep(0.05)
                continue
            answer = (res.status_code, res.text)
            if "nats: ok" in res.text:
                break
            await asyncio.sleep(0.05)
    assert answer == (503, "nats: ok\nredis: not ready\n")
    os.kill(os.getpid(), signal.SIGTERM)
    async with asyncio.timeout(5):
        assert await serving == 0
    assert built == []
    out = capsys.readouterr().out
    assert '"event": "service.backend_unreachable"' in out
    assert "Traceback" not in out


async def test_a_build_that_fails_exits_1_with_one_log_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("hosted", "info", "json")

    async def build(ctx: Context[HostedSettings]) -> Parts:
        raise RuntimeError("no such device")

    assert await _serve(_service(build)) == 1
    out = capsys.readouterr().out
    assert '"event": "service.start_failed"' in out
    assert "no such device" in out


async def test_a_check_may_give_a_detail_for_readyz() -> None:
    port = free_port()
    stop = asyncio.Event()
    checks: dict[str, ReadyCheck] = {
        "outbox": lambda: Check(ok=False, detail="12 pending, oldest 3.0 s"),
        "plain": lambda: True,
    }
    server = asyncio.create_task(serve_health_and_metrics("127.0.0.1", port, checks, stop))
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(100):
                try:
                    res = await http.get("/readyz")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
        assert res.status_code == 503
        assert res.text == "outbox: not ready (12 pending, oldest 3.0 s)\nplain: ok\n"
    finally:
        stop.set()
        await server
