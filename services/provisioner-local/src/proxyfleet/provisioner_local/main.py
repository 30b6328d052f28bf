"""proxyfleet-provisioner-local: the shared provisioner runner with the local adapter."""

from __future__ import annotations

import typer

from proxyfleet.common.cli import (
    AckWait,
    Concurrency,
    InstallationId,
    LogFormat,
    LogLevel,
    MetricsPort,
    Namespace,
    NatsUrl,
    ProviderName,
    ProvidersConfig,
    ReconcileInterval,
    RedisUrl,
    StaleAfter,
    common_settings,
)
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.logging import configure_logging
from proxyfleet.common.providers_config import (
    LocalSettings,
    ProviderConfig,
    load_provider,
)
from proxyfleet.common.runner import RunnerSettings, run_provisioner
from proxyfleet.common.settings import CommonSettings
from proxyfleet.provisioner_local.adapter import LocalProvider, local_options

SERVICE = "provisioner-local"
_D = CommonSettings()
_R = RunnerSettings(provider="")

app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def serve(
    provider: ProviderName,
    metrics_port: MetricsPort = 0,
    reconcile_interval: ReconcileInterval = _R.reconcile_interval,
    stale_after: StaleAfter = _R.stale_after,
    ack_wait: AckWait = _R.ack_wait,
    concurrency: Concurrency = _R.concurrency,
    nats_url: NatsUrl = _D.nats_url,
    redis_url: RedisUrl = _D.redis_url,
    installation_id: InstallationId = _D.installation_id,
    namespace: Namespace = _D.namespace,
    providers_config: ProvidersConfig = _D.providers_config,
    log_level: LogLevel = _D.log_level,
    log_format: LogFormat = _D.log_format,
) -> None:
    """Create and delete this provider's proxies as local processes."""
    common = common_settings(
        nats_url, redis_url, installation_id, namespace, providers_config, log_level, log_format
    )
    configure_logging(SERVICE, common.log_level, common.log_format)
    try:
        config, local = _local_provider(common.providers_config, provider)
        settings = RunnerSettings(
            provider=provider,
            boot_timeout=config.boot_timeout,
            ack_wait=ack_wait,
            concurrency=concurrency,
            reconcile_interval=reconcile_interval,
            stale_after=stale_after,
            metrics_port=metrics_port,
        )
        adapter = LocalProvider(local_options(local, common.installation_id))
    except (ConfigError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(run_provisioner(common, settings, lambda: adapter))


def _local_provider(path: str, name: str) -> tuple[ProviderConfig, LocalSettings]:
    found = load_provider(path, name, "local")
    assert found.local is not None  # the config check requires the section for its type
    return found, found.local


def main() -> None:
    app()
