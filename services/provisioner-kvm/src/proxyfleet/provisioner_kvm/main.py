"""proxyfleet-provisioner-kvm: the shared provisioner runner with the KVM/libvirt adapter."""

from __future__ import annotations

from typing import Annotated, Literal

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
from proxyfleet.common.providers_config import load_provider
from proxyfleet.common.runner import RunnerSettings, run_provisioner
from proxyfleet.common.settings import CommonSettings
from proxyfleet.provisioner_kvm.adapter import KvmProvider

SERVICE = "provisioner-kvm"
_D = CommonSettings()
_R = RunnerSettings(provider="", ack_wait=60.0, concurrency=4)

app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def serve(
    provider: ProviderName,
    metrics_port: MetricsPort = 0,
    libvirt_trace: Annotated[
        Literal["calls", "full"],
        typer.Option(
            envvar="PROXYFLEET_LIBVIRT_TRACE",
            help="At log level debug: calls = one line per libvirt call (call, ids, duration, "
            "error); full = also domain XML, metadata and addresses. cloud-init user-data "
            "is never logged.",
        ),
    ] = "calls",
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
    """Create and delete this provider's proxies as VMs on its libvirt hosts."""
    common = common_settings(
        nats_url, redis_url, installation_id, namespace, providers_config, log_level, log_format
    )
    configure_logging(SERVICE, common.log_level, common.log_format)
    try:
        config = load_provider(common.providers_config, provider, "kvm")
        assert config.kvm is not None  # the config check requires the section for its type
        kvm = config.kvm
        settings = RunnerSettings(
            provider=provider,
            boot_timeout=config.boot_timeout,
            ack_wait=ack_wait,
            concurrency=concurrency,
            reconcile_interval=reconcile_interval,
            # A create waits up to address_timeout for the guest: republishing its intent
            # before then would only start a second waiter.
            stale_after=max(stale_after, kvm.address_timeout + ack_wait),
            metrics_port=metrics_port,
        )
    except (ConfigError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None

    def make_provider() -> KvmProvider:
        return KvmProvider(kvm, common.installation_id, trace_full=libvirt_trace == "full")

    raise typer.Exit(run_provisioner(common, settings, make_provider))


def main() -> None:
    app()
