"""proxyfleet-api: the command line (every option also has an env var)."""

from __future__ import annotations

import gc
from typing import Annotated

import typer

from proxyfleet.api.settings import ApiSettings
from proxyfleet.common import cli
from proxyfleet.common.clock import SystemClock
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.logging import configure_logging
from proxyfleet.common.providers_config import load_providers_config

_D = ApiSettings()
_C = _D.common

_TOKENS_HELP = "Bearer token with the {} scope; repeatable (the env var: comma-separated)."


def _tokens(values: list[str] | None) -> tuple[str, ...]:
    return tuple(t.strip() for v in values or [] for t in v.split(",") if t.strip())


def run(
    nats_url: cli.NatsUrl = _C.nats_url,
    redis_url: cli.RedisUrl = _C.redis_url,
    installation_id: cli.InstallationId = _C.installation_id,
    namespace: cli.Namespace = _C.namespace,
    providers_config: cli.ProvidersConfig = _C.providers_config,
    log_level: cli.LogLevel = _C.log_level,
    log_format: cli.LogFormat = _C.log_format,
    host: Annotated[str, typer.Option(envvar="PROXYFLEET_API_HOST", help="Listen address.")] = (
        _D.host
    ),
    port: Annotated[int, typer.Option(envvar="PROXYFLEET_API_PORT", help="Listen port.")] = _D.port,
    admin_token: Annotated[
        list[str] | None,
        typer.Option(envvar="PROXYFLEET_ADMIN_TOKENS", help=_TOKENS_HELP.format("admin")),
    ] = None,
    client_token: Annotated[
        list[str] | None,
        typer.Option(envvar="PROXYFLEET_CLIENT_TOKENS", help=_TOKENS_HELP.format("client")),
    ] = None,
    insecure_dev: Annotated[
        bool,
        typer.Option(
            envvar="PROXYFLEET_INSECURE_DEV", help="No authentication (development only)."
        ),
    ] = _D.insecure_dev,
    cooldown: Annotated[
        float, typer.Option(envvar="PROXYFLEET_LEASE_COOLDOWN", help="Seconds after a release.")
    ] = _D.cooldown,
    max_lease_ttl: Annotated[
        float, typer.Option(envvar="PROXYFLEET_MAX_LEASE_TTL", help="Longest lease, seconds.")
    ] = _D.max_lease_ttl,
    default_lease_ttl: Annotated[
        float, typer.Option(envvar="PROXYFLEET_DEFAULT_LEASE_TTL", help="Default lease, seconds.")
    ] = _D.default_lease_ttl,
    ban_seconds: Annotated[
        float, typer.Option(envvar="PROXYFLEET_BAN_SECONDS", help="Ban after a blocked report.")
    ] = _D.ban_seconds,
    sweep_interval: Annotated[
        float,
        typer.Option(envvar="PROXYFLEET_SWEEP_INTERVAL", help="Seconds between expiry sweeps."),
    ] = _D.sweep_interval,
) -> None:
    """Serve the Proxyfleet REST API: proxies, leases, providers, health and metrics."""
    settings = ApiSettings(
        common=cli.common_settings(
            nats_url=nats_url,
            redis_url=redis_url,
            installation_id=installation_id,
            namespace=namespace,
            providers_config=providers_config,
            log_level=log_level,
            log_format=log_format,
        ),
        host=host,
        port=port,
        admin_tokens=_tokens(admin_token),
        client_tokens=_tokens(client_token),
        insecure_dev=insecure_dev,
        cooldown=cooldown,
        max_lease_ttl=max_lease_ttl,
        default_lease_ttl=default_lease_ttl,
        ban_seconds=ban_seconds,
        sweep_interval=sweep_interval,
    )
    configure_logging("api", log_level, log_format)
    try:
        settings.check()
        providers = load_providers_config(providers_config)
    except ConfigError as exc:
        typer.echo(f"proxyfleet-api: {exc}", err=True)
        raise typer.Exit(2) from None
    # Imported once the configuration is known good: a refusal is reported at once,
    # without loading the web stack and the store clients (over a second here).
    import uvicorn  # noqa: PLC0415

    from proxyfleet.api.app import create_app  # noqa: PLC0415
    from proxyfleet.api.deps import AppDeps  # noqa: PLC0415

    app = create_app(settings, AppDeps(providers=providers, clock=SystemClock()))
    tune_gc()
    # uvloop and httptools (C) rather than asyncio's loop and h11 (pure Python): about
    # twice the requests per core here (docs/performance.md).
    uvicorn.run(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        log_level=log_level.lower(),
        access_log=False,
        server_header=False,
        lifespan="on",
    )


GC_THRESHOLDS = (20_000, 50, 100)
"""Collect the young generation every 20,000 net allocations (Python's default: 700)."""


def tune_gc() -> None:
    """Freeze what start-up built (modules, the app: never garbage) so full collections
    skip it, and collect less often. Under load, full collections of the default settings
    paused the server for up to 140 ms, 20 times in 30 s (docs/performance.md)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def main() -> None:
    typer.run(run)
