"""The life of one service process inside its event loop: signals, connections, the
build step, one task group of components and the health server, then an orderly close
(components stop, the service's own closers in order, NATS drains, Redis closes)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import nats.errors
import redis.asyncio as aioredis
import redis.exceptions
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.errors import ConfigError, MessagingUnavailable
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host.connect import nats_with_streams, redis_reachable
from proxyfleet.common.host.files import open_file_limit, raise_open_files
from proxyfleet.common.host.http import serve_health_and_metrics
from proxyfleet.common.host.spec import Context, Parts, ReadyCheck, Service
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import connect_redis

T = TypeVar("T")
S = TypeVar("S")
log = get_logger("proxyfleet.host")

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2
REDIS_PING_TIMEOUT = 1.0


class Stopped(Exception):
    """SIGTERM/SIGINT arrived while the service was still starting."""


def report_config_error(service: str, exc: ConfigError) -> int:
    """Every service reports a bad configuration the same way: one line, exit code 2."""
    print(f"proxyfleet-{service}: {exc}", file=sys.stderr)
    return EXIT_CONFIG


async def until_stopped(work: Awaitable[T], stop: asyncio.Event) -> T:
    """Await `work`, or cancel it and raise Stopped when `stop` is set first."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise Stopped


@dataclass(slots=True)
class Connections:
    nats: NatsClient | None = None
    redis: aioredis.Redis | None = None

    def checks(self, *, with_nats: bool, with_redis: bool) -> dict[str, ReadyCheck]:
        """A readiness check per backend the service uses (not ready until connected)."""
        checks: dict[str, ReadyCheck] = {}
        if with_nats:

            async def nats_connected() -> bool:
                return self.nats is not None and bool(self.nats.is_connected)

            checks["nats"] = nats_connected
        if with_redis:

            async def redis_ping() -> bool:
                if self.redis is None:
                    return False
                try:
                    return bool(await asyncio.wait_for(self.redis.ping(), REDIS_PING_TIMEOUT))
                except (redis.exceptions.RedisError, OSError, TimeoutError):
                    return False

            checks["redis"] = redis_ping
        return checks

    async def close(self) -> None:
        if self.nats is not None:
            try:
                await self.nats.drain()
            except (nats.errors.Error, OSError, TimeoutError) as exc:
                log.warning("service.nats_drain_failed", error=str(exc))
        if self.redis is not None:
            try:
                await self.redis.aclose()
            except (redis.exceptions.RedisError, OSError) as exc:
                log.warning("service.redis_close_failed", error=str(exc))


async def serve(
    service: Service[S],
    common: CommonSettings,
    settings: S,
    providers: ProvidersConfig,
    clock: Clock | None = None,
) -> int:
    """Run the service until SIGTERM/SIGINT (or until a component ends); the exit code."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        first = not stop.is_set()
        stop.set()  # before the log line: nothing it raises may keep the service running
        if first:
            log.info("service.stopping", service=service.name, signal=sig.name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    conns = Connections()
    # The health server answers from the start: /readyz says 503 until every backend is
    # reached and the build is done (the checks are filled in as the start proceeds).
    checks = conns.checks(with_nats=service.needs_nats, with_redis=service.needs_redis)
    health = _start_health_server(settings, checks, stop)
    try:
        await until_stopped(_connect(service, common, settings, conns), stop)
        ctx = Context(
            service=service.name,
            common=common,
            settings=settings,
            providers=providers,
            clock=clock or SystemClock(),
            stop=stop,
            nats_client=conns.nats,
            redis_client=conns.redis,
            open_files=raise_open_files() if service.raise_open_files else open_file_limit(),
        )
        parts = await until_stopped(service.build(ctx), stop)
        checks.update(parts.ready)
        return await _run_parts(service, parts, health, stop)
    except Stopped:
        if health is not None and health.done() and not health.cancelled() and health.exception():
            return EXIT_FAILED  # the health server failed (port taken): logged by it
        log.info("service.stopped", service=service.name, during="start")
        return EXIT_OK
    except MessagingUnavailable as exc:
        log.error("service.backend_unreachable", service=service.name, error=str(exc))  # noqa: TRY400
        return EXIT_FAILED
    except ConfigError as exc:
        return report_config_error(service.name, exc)
    except Exception as exc:  # connecting or building failed: say so on one line, exit 1
        log.exception("service.start_failed", service=service.name, error=repr(exc))
        return EXIT_FAILED
    finally:
        if health is not None and not health.done():
            stop.set()
            await asyncio.gather(health, return_exceptions=True)
        await conns.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def _start_health_server(
    settings: object, checks: dict[str, ReadyCheck], stop: asyncio.Event
) -> asyncio.Task[None] | None:
    """The /healthz /readyz /metrics server as a task (None without a metrics port); one
    that fails stops the service."""
    port: Any = getattr(settings, "metrics_port", 0)
    if not port:
        return None
    host = str(getattr(settings, "metrics_host", "127.0.0.1"))
    task = asyncio.create_task(serve_health_and_metrics(host, port, checks, stop))

    def done(t: asyncio.Task[None]) -> None:
        if not t.cancelled() and (exc := t.exception()) is not None:
            log.error("service.component_failed", component="health-server", error=repr(exc))
        stop.set()

    task.add_done_callback(done)
    return task


async def _connect(
    service: Service[S], common: CommonSettings, settings: S, conns: Connections
) -> None:
    """Each backend the service needs, tried until reached (or until the service's
    connect timeout, when it has one)."""
    timeout = service.connect_timeout(settings)
    try:
        async with asyncio.timeout(timeout):
            if service.needs_nats:
                conns.nats = await nats_with_streams(
                    service.name, common.nats_url, common.stream_replicas
                )
            if service.needs_redis:
                conns.redis = connect_redis(common.redis_url)
                await redis_reachable(service.name, common.redis_url, conns.redis)
    except TimeoutError:
        missing = "NATS" if service.needs_nats and conns.nats is None else "Redis"
        url = common.nats_url if missing == "NATS" else common.redis_url
        raise MessagingUnavailable(
            f"{missing} at {url}: not reachable within {timeout:g} s"
        ) from None


async def _run_parts(
    service: Service[S], parts: Parts, health: asyncio.Task[None] | None, stop: asyncio.Event
) -> int:
    failed: list[str] = []

    async def component(name: str, run: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        try:
            await run(stop)
        except Exception as exc:  # any failure: stop the others cleanly, then exit 1
            failed.append(name)
            log.exception("service.component_failed", component=name, error=repr(exc))
        finally:
            stop.set()  # a component that ends, ends the service

    try:
        async with asyncio.TaskGroup() as tasks:
            for name, run in parts.components.items():
                tasks.create_task(component(name, run))
            loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
            log.info(
                "service.started",
                service=service.name,
                components=list(parts.components),
                loop=loop,
            )
    finally:
        for close in parts.close:
            try:
                await close()
            except Exception as exc:  # one closer failing must not skip the others
                log.warning("service.close_failed", service=service.name, error=repr(exc))
    if health is not None:
        await asyncio.gather(health, return_exceptions=True)
        if not health.cancelled() and health.exception() is not None:
            failed.append("health-server")
    code = EXIT_FAILED if failed else parts.exit_code()
    log.info("service.stopped", service=service.name, exit_code=code)
    return code
