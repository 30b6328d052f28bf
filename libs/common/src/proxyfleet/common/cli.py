"""Typer options shared by every service's command line, so flags and env names agree."""

from __future__ import annotations

from typing import Annotated

import typer

from proxyfleet.common.settings import CommonSettings

NatsUrl = Annotated[str, typer.Option(envvar="NATS_URL", help="NATS server URL.")]
RedisUrl = Annotated[str, typer.Option(envvar="REDIS_URL", help="Redis URL.")]
InstallationId = Annotated[
    str, typer.Option(envvar="PROXYFLEET_INSTALLATION_ID", help="Id stamped on every resource.")
]
Namespace = Annotated[
    str, typer.Option(envvar="PROXYFLEET_REDIS_NAMESPACE", help="Prefix of every Redis key.")
]
ProvidersConfig = Annotated[
    str,
    typer.Option(
        "--providers-config", envvar="PROXYFLEET_PROVIDERS_CONFIG", help="Providers YAML file."
    ),
]
LogLevel = Annotated[str, typer.Option(envvar="PROXYFLEET_LOG_LEVEL", help="Log level.")]
LogFormat = Annotated[str, typer.Option(envvar="PROXYFLEET_LOG_FORMAT", help="json or console.")]

# ---- the provisioner runner's options (every provisioner service) -----------------------

ProviderName = Annotated[
    str,
    typer.Option("--provider", envvar="PROXYFLEET_PROVIDER", help="Provider instance to serve."),
]
MetricsPort = Annotated[
    int, typer.Option(envvar="PROXYFLEET_METRICS_PORT", help="/healthz /readyz /metrics (0: off).")
]
ReconcileInterval = Annotated[
    float,
    typer.Option(envvar="PROXYFLEET_RECONCILE_INTERVAL", help="Seconds between reconciles."),
]
StaleAfter = Annotated[
    float,
    typer.Option(
        envvar="PROXYFLEET_STALE_AFTER", help="Republish intents of proxies stuck this long."
    ),
]
AckWait = Annotated[
    float,
    typer.Option(
        envvar="PROXYFLEET_ACK_WAIT", help="Seconds before an unacked intent is redelivered."
    ),
]
Concurrency = Annotated[
    int, typer.Option(envvar="PROXYFLEET_CONCURRENCY", help="Intents handled at once.")
]

_D = CommonSettings()


def common_settings(
    nats_url: str = _D.nats_url,
    redis_url: str = _D.redis_url,
    installation_id: str = _D.installation_id,
    namespace: str = _D.namespace,
    providers_config: str = _D.providers_config,
    log_level: str = _D.log_level,
    log_format: str = _D.log_format,
) -> CommonSettings:
    return CommonSettings(
        nats_url=nats_url,
        redis_url=redis_url,
        installation_id=installation_id,
        namespace=namespace,
        providers_config=providers_config,
        log_level=log_level,
        log_format=log_format,
    )
