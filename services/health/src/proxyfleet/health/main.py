"""`proxyfleet-health`: probe every proxy through itself and keep its health in the registry."""

from __future__ import annotations

import asyncio
import signal
import ssl
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import nats.errors
import typer

from proxyfleet.common import cli
from proxyfleet.common.clock import SystemClock
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.logging import configure_logging, get_logger
from proxyfleet.common.messaging import Publisher, connect_nats, ensure_streams
from proxyfleet.common.metrics import serve_health_and_metrics
from proxyfleet.common.providers_config import load_providers_config
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.health import loops
from proxyfleet.health.loops import LOOPS
from proxyfleet.health.prober import Prober, make_ssl_context
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.worker import HealthWorker

SERVICE = "health"
log = get_logger("proxyfleet.health")

_D = HealthSettings()
_C = _D.common


def _opt(env: str, help_: str) -> Any:
    return typer.Option(envvar=env, help=help_)


Target = Annotated[str, _opt("PROXYFLEET_HEALTH_TARGET", "URL fetched through each proxy.")]
CaFile = Annotated[str, _opt("PROXYFLEET_HEALTH_CA_FILE", "CA bundle for the target (PEM).")]
Interval = Annotated[float, _opt("PROXYFLEET_HEALTH_INTERVAL", "Seconds between two probes.")]
Timeout = Annotated[
    float, _opt("PROXYFLEET_HEALTH_TIMEOUT", "Seconds one probe may take (< --interval).")
]
Concurrency = Annotated[int, _opt("PROXYFLEET_HEALTH_CONCURRENCY", "Probes in flight at once.")]
ClaimBatch = Annotated[int, _opt("PROXYFLEET_HEALTH_CLAIM_BATCH", "Most proxies per claim.")]
Tick = Annotated[float, _opt("PROXYFLEET_HEALTH_TICK", "Seconds between claims when idle.")]
Writers = Annotated[int, _opt("PROXYFLEET_HEALTH_WRITERS", "Tasks writing results to Redis.")]
StatsInterval = Annotated[
    float, _opt("PROXYFLEET_HEALTH_STATS_INTERVAL", "Seconds between gauge refreshes.")
]
MetricsHost = Annotated[str, _opt("PROXYFLEET_METRICS_HOST", "Address of /metrics.")]
MetricsPort = Annotated[int, _opt("PROXYFLEET_METRICS_PORT", "Port of /metrics (0: off).")]
UnhealthyAfter = Annotated[
    int, _opt("PROXYFLEET_HEALTH_UNHEALTHY_AFTER", "Failed probes before unhealthy.")
]
ReadyAfter = Annotated[int, _opt("PROXYFLEET_HEALTH_READY_AFTER", "Good probes before ready.")]
Loop = Annotated[str, _opt("PROXYFLEET_HEALTH_LOOP", f"Event loop: {' or '.join(LOOPS)}.")]
TlsResumeFor = Annotated[
    float,
    _opt("PROXYFLEET_HEALTH_TLS_RESUME_FOR", "Seconds TLS sessions are resumed (0: never)."),
]

app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def run(
    nats_url: cli.NatsUrl = _C.nats_url,
    redis_url: cli.RedisUrl = _C.redis_url,
    installation_id: cli.InstallationId = _C.installation_id,
    namespace: cli.Namespace = _C.namespace,
    providers_config: cli.ProvidersConfig = _C.providers_config,
    log_level: cli.LogLevel = _C.log_level,
    log_format: cli.LogFormat = _C.log_format,
    target: Target = _D.target,
    ca_file: CaFile = _D.ca_file,
    interval: Interval = _D.interval,
    timeout: Timeout = _D.timeout,
    concurrency: Concurrency = _D.concurrency,
    claim_batch: ClaimBatch = _D.claim_batch,
    tick: Tick = _D.tick,
    writers: Writers = _D.writers,
    stats_interval: StatsInterval = _D.stats_interval,
    metrics_host: MetricsHost = _D.metrics_host,
    metrics_port: MetricsPort = _D.metrics_port,
    unhealthy_after: UnhealthyAfter = _D.unhealthy_after,
    ready_after: ReadyAfter = _D.ready_after,
    loop: Loop = _D.loop,
    tls_resume_for: TlsResumeFor = _D.tls_resume_for,
) -> None:
    """Probe every proxy with a real CONNECT and mark it ready or unhealthy."""
    try:
        settings = HealthSettings(
            common=cli.common_settings(
                nats_url=nats_url,
                redis_url=redis_url,
                installation_id=installation_id,
                namespace=namespace,
                providers_config=providers_config,
                log_level=log_level,
                log_format=log_format,
            ),
            target=target,
            ca_file=ca_file,
            interval=interval,
            timeout=timeout,
            concurrency=concurrency,
            claim_batch=claim_batch,
            tick=tick,
            writers=writers,
            stats_interval=stats_interval,
            metrics_host=metrics_host,
            metrics_port=metrics_port,
            unhealthy_after=unhealthy_after,
            ready_after=ready_after,
            loop=loop,
            tls_resume_for=tls_resume_for,
        )
        providers = [p.name for p in load_providers_config(providers_config).providers]
        ssl_context = (
            make_ssl_context(ca_file, settings.tls_resume_for)
            if settings.parsed_target().tls
            else None
        )
    except ConfigError as exc:
        typer.echo(f"proxyfleet-health: {exc}", err=True)
        raise typer.Exit(2) from None
    configure_logging(SERVICE, settings.common.log_level, settings.common.log_format)
    try:
        loops.run(_main(settings, providers, ssl_context), settings.loop)
    except (OSError, nats.errors.Error) as exc:  # NATS unreachable at start, port taken...
        typer.echo(f"proxyfleet-health: {exc}", err=True)
        raise typer.Exit(1) from None


async def _main(
    settings: HealthSettings, providers: Sequence[str], ssl_context: ssl.SSLContext | None
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(settings, providers=providers, ssl_context=ssl_context, stop=stop)


async def serve(
    settings: HealthSettings,
    *,
    providers: Sequence[str],
    stop: asyncio.Event,
    ssl_context: ssl.SSLContext | None = None,
) -> None:
    """Run the probe loop (and the /healthz, /readyz, /metrics server) until `stop` is set."""
    clock = SystemClock()
    redis = connect_redis(settings.common.redis_url)
    nc = await connect_nats(settings.common.nats_url, name=f"proxyfleet-{SERVICE}")
    try:
        js = nc.jetstream()
        await ensure_streams(js)
        worker = HealthWorker(
            settings,
            registry=ProxyRegistry(redis, clock, namespace=settings.common.namespace),
            publisher=Publisher(js, clock),
            nc=nc,
            prober=Prober(
                settings.parsed_target(),
                timeout=settings.timeout,
                clock=clock,
                ssl_context=ssl_context,
            ),
            clock=clock,
            providers=providers,
        )

        async def ready() -> bool:
            return nc.is_connected and worker.ready

        log.info(
            "started",
            target=settings.target,
            loop=type(asyncio.get_running_loop()).__module__.split(".")[0],
            tls_resume_for=settings.tls_resume_for,
            interval=settings.interval,
            concurrency=settings.concurrency,
            providers=list(providers),
        )
        tasks = [asyncio.create_task(worker.run(stop))]
        if settings.metrics_port:
            server = serve_health_and_metrics(
                settings.metrics_host, settings.metrics_port, ready, stop
            )
            tasks.append(asyncio.create_task(server))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            stop.set()  # one part failed (or we were cancelled): stop the other cleanly
            await asyncio.wait(tasks)
        for task in done:
            task.result()  # re-raise the failure, if any
        log.info("stopped")
    finally:
        await nc.close()
        await redis.aclose()


def main(argv: Sequence[str] | None = None) -> None:
    app(args=list(argv) if argv is not None else sys.argv[1:], prog_name="proxyfleet-health")


if __name__ == "__main__":
    main()
