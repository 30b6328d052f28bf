"""`proxyfleet-gc`: the command line, and wiring NATS, Redis and the collector together."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Annotated, Any, TypeVar

import typer

from proxyfleet.common import cli
from proxyfleet.common.clock import SystemClock
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.logging import configure_logging, get_logger
from proxyfleet.common.messaging import Publisher, connect_nats, ensure_streams
from proxyfleet.common.metrics import serve_health_and_metrics
from proxyfleet.common.providers_config import load_providers_config
from proxyfleet.common.settings import CommonSettings
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.gc.collector import Collector
from proxyfleet.gc.settings import GcSettings

app = typer.Typer(add_completion=False, help=__doc__)
log = get_logger("proxyfleet.gc")

T = TypeVar("T")

ONCE_CONNECT_TIMEOUT = 10.0
"""With --once, give up (exit 1) when NATS cannot be reached this long; a service waits."""

_C = cli.common_settings()
_G = GcSettings()

Interval = Annotated[
    float, typer.Option(envvar="PROXYFLEET_GC_INTERVAL", min=0.1, help="Seconds between rounds.")
]
MinAge = Annotated[
    float,
    typer.Option(
        envvar="PROXYFLEET_GC_MIN_AGE", min=0, help="Never delete a resource younger than this."
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(envvar="PROXYFLEET_GC_DRY_RUN", help="Log what would be deleted; delete nothing."),
]
MaxDeletions = Annotated[
    int,
    typer.Option(
        envvar="PROXYFLEET_GC_MAX_DELETIONS", min=1, help="Most deletions per provider per round."
    ),
]
RequestTimeout = Annotated[
    float,
    typer.Option(
        envvar="PROXYFLEET_GC_REQUEST_TIMEOUT",
        min=0.1,
        help="Seconds to wait for a provisioner's list of resources.",
    ),
]
MetricsHost = Annotated[
    str, typer.Option(envvar="PROXYFLEET_GC_METRICS_HOST", help="Health/metrics address.")
]
MetricsPort = Annotated[
    int,
    typer.Option(
        envvar="PROXYFLEET_GC_METRICS_PORT", min=0, max=65535, help="Health/metrics port; 0 = off."
    ),
]
Once = Annotated[
    bool,
    typer.Option(
        envvar="PROXYFLEET_GC_ONCE",
        help="Run one round and exit (exit code 1 if a provider was skipped).",
    ),
]


@app.command()
def run(
    nats_url: cli.NatsUrl = _C.nats_url,
    redis_url: cli.RedisUrl = _C.redis_url,
    installation_id: cli.InstallationId = _C.installation_id,
    namespace: cli.Namespace = _C.namespace,
    providers_config: cli.ProvidersConfig = _C.providers_config,
    log_level: cli.LogLevel = _C.log_level,
    log_format: cli.LogFormat = _C.log_format,
    interval: Interval = _G.interval,
    min_age: MinAge = _G.min_age,
    max_deletions: MaxDeletions = _G.max_deletions,
    dry_run: DryRun = _G.dry_run,
    request_timeout: RequestTimeout = _G.request_timeout,
    metrics_host: MetricsHost = _G.metrics_host,
    metrics_port: MetricsPort = _G.metrics_port,
    once: Once = False,
) -> None:
    """Every interval, ask each provider for its resources and the delete of the orphans."""
    common = cli.common_settings(
        nats_url=nats_url,
        redis_url=redis_url,
        installation_id=installation_id,
        namespace=namespace,
        providers_config=providers_config,
        log_level=log_level,
        log_format=log_format,
    )
    settings = GcSettings(
        interval=interval,
        min_age=min_age,
        max_deletions=max_deletions,
        dry_run=dry_run,
        request_timeout=request_timeout,
        metrics_host=metrics_host,
        metrics_port=metrics_port,
    )
    configure_logging("gc", common.log_level, common.log_format)
    try:
        providers = [p.name for p in load_providers_config(common.providers_config).providers]
    except ConfigError as exc:
        typer.echo(f"proxyfleet-gc: {exc}", err=True)
        raise typer.Exit(2) from None
    ok = asyncio.run(serve(common, settings, providers, once=once))
    if not ok:
        raise typer.Exit(1)


async def serve(
    common: CommonSettings, settings: GcSettings, providers: list[str], *, once: bool
) -> bool:
    """Run until SIGTERM/SIGINT (or one round with `once`); False if that round was not ok."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    clock = SystemClock()
    connecting = connect_nats(common.nats_url, name="proxyfleet-gc")
    unreachable = False
    try:
        nc = await _unless_stopped(
            asyncio.wait_for(connecting, ONCE_CONNECT_TIMEOUT) if once else connecting, stop
        )
    except TimeoutError:
        nc, unreachable = None, True
    if nc is None:  # stopped while waiting for NATS, or gave up (--once)
        if unreachable:
            log.error("gc.nats_unreachable", url=common.nats_url, seconds=ONCE_CONNECT_TIMEOUT)
        return not unreachable
    redis = connect_redis(common.redis_url)
    try:
        js = nc.jetstream()
        await ensure_streams(js)
        collector = Collector(
            nc=nc,
            registry=ProxyRegistry(redis, clock, namespace=common.namespace),
            publisher=Publisher(js, clock),
            providers=providers,
            installation_id=common.installation_id,
            settings=settings,
            clock=clock,
        )
        log.info("gc.started", providers=providers, dry_run=settings.dry_run, once=once)
        if once:
            return (await collector.run_once()).result == "ok"
        async with asyncio.TaskGroup() as tg:
            if settings.metrics_port:

                async def ready() -> bool:
                    return bool(nc.is_connected)

                tg.create_task(
                    serve_health_and_metrics(
                        settings.metrics_host, settings.metrics_port, ready, stop
                    )
                )
            tg.create_task(collector.run_forever(stop))
        return True
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        with contextlib.suppress(Exception):
            await nc.drain()
        await redis.aclose()
        log.info("gc.stopped")


async def _unless_stopped(coro: Coroutine[Any, Any, T], stop: asyncio.Event) -> T | None:
    """Await `coro`, or cancel it and return None when `stop` is set first."""
    task = asyncio.ensure_future(coro)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


def main() -> None:
    app()
