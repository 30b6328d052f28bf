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

from proxyfleet.common.clock import Clock, SystemClock
from proxyfleet.common.errors import ConfigError, MessagingUnavailable
from proxyfleet.common.host.http import serve_health_and_metrics
from proxyfleet.common.host.spec import Context, Parts, ReadyCheck, Service
from proxyfleet.common.logging import get_logger
from proxyfleet.common.messaging import connect_nats, ensure_streams
from proxyfleet.common.providers_config import ProvidersConfig
from proxyfleet.common.settings import CommonSettings
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

    def checks(self) -> dict[str, ReadyCheck]:
        """A readiness check per backend this service uses."""
        checks: dict[str, ReadyCheck] = {}
        if (nc := self.nats) is not None:

            async def nats_connected() -> bool:
                return bool(nc.is_connected)

            checks["nats"] = nats_connected
        if (client := self.redis) is not None:

            async def redis_ping() -> bool:
                try:
                    return bool(await asyncio.wait_for(client.ping(), REDIS_PING_TIMEOUT))
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
        if not stop.is_set():
            log.info("service.stopping", service=service.name, signal=sig.name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    conns = Connections()
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
        )
        parts = await until_stopped(service.build(ctx), stop)
        return await _run_parts(service, settings, parts, conns, stop)
    except Stopped:
        log.info("service.stopped", service=service.name, during="start")
        return EXIT_OK
    except MessagingUnavailable as exc:
        log.error("service.nats_unreachable", service=service.name, error=str(exc))  # noqa: TRY400
        return EXIT_FAILED
    except ConfigError as exc:
        return report_config_error(service.name, exc)
    except Exception as exc:  # connecting or building failed: say so on one line, exit 1
        log.exception("service.start_failed", service=service.name, error=repr(exc))
        return EXIT_FAILED
    finally:
        await conns.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def _connect(
    service: Service[S], common: CommonSettings, settings: S, conns: Connections
) -> None:
    if service.needs_nats:
        connecting = connect_nats(common.nats_url, name=f"proxyfleet-{service.name}")
        timeout = service.connect_timeout(settings)
        try:
            conns.nats = await (asyncio.wait_for(connecting, timeout) if timeout else connecting)
        except TimeoutError:
            raise MessagingUnavailable(
                f"NATS at {common.nats_url}: not reachable within {timeout:g} s"
            ) from None
        await ensure_streams(conns.nats.jetstream())
    if service.needs_redis:
        conns.redis = connect_redis(common.redis_url)


async def _run_parts(
    service: Service[S], settings: S, parts: Parts, conns: Connections, stop: asyncio.Event
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
            port: Any = getattr(settings, "metrics_port", 0)
            if port:
                checks = {**conns.checks(), **parts.ready}
                host = str(getattr(settings, "metrics_host", "127.0.0.1"))
                server = serve_health_and_metrics(host, port, checks, stop)
                tasks.create_task(component("health-server", lambda _: server))
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
    code = EXIT_FAILED if failed else parts.exit_code()
    log.info("service.stopped", service=service.name, exit_code=code)
    return code
