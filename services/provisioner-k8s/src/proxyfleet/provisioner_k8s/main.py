"""proxyfleet-provisioner-k8s: the shared provisioner runner with the Kubernetes adapter,
and the watcher that fails proxies whose pod failed for good."""

from __future__ import annotations

import dataclasses

from proxyfleet.common import host
from proxyfleet.common.host import Context
from proxyfleet.common.runner import provisioner_service
from proxyfleet.common.runner.lost_watcher import LostWatch
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.provider_type import PROVIDER_TYPE
from proxyfleet.provisioner_k8s.pure.config import K8sProviderConfig
from proxyfleet.provisioner_k8s.settings import K8sProvisionerSettings as Settings
from proxyfleet.provisioner_k8s.watcher import PodFailureWatcher


def make_provider(entry: K8sProviderConfig, ctx: Context[Settings]) -> K8sProvider:
    return K8sProvider(
        entry.kubernetes,
        ctx.common.installation_id,
        entry.name,
        zones=entry.zones,
        tuning=ctx.settings.tuning(),
    )


def adjust(entry: K8sProviderConfig, settings: Settings) -> Settings:
    """A create may wait up to address_timeout for its pod: republishing its intent
    before then would only start a second waiter."""
    floor = settings.address_timeout + settings.ack_wait
    return dataclasses.replace(settings, stale_after=max(settings.stale_after, floor))


# The providers config calls the type `kubernetes`; the command is the shorter
# proxyfleet-provisioner-k8s (env prefix PROXYFLEET_PROVISIONER_K8S_).
SERVICE = dataclasses.replace(
    provisioner_service(
        PROVIDER_TYPE,
        "Kubernetes pods",
        make_provider,
        Settings,
        adjust,
        lost=LostWatch("pod-failures", PodFailureWatcher, lambda s: s.failure_check_interval),
    ),
    name="provisioner-k8s",
)


def main() -> None:
    host.main(SERVICE)
