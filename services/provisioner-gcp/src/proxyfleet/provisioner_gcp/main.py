"""proxyfleet-provisioner-gcp: the shared provisioner runner with the GCE adapter, and the
watcher that fails proxies whose spot VM was preempted."""

from __future__ import annotations

import dataclasses

from proxyfleet.common import host
from proxyfleet.common.host import Context
from proxyfleet.common.runner import provisioner_service
from proxyfleet.common.runner.lost_watcher import LostWatch
from proxyfleet.provisioner_gcp.adapter import ADDRESS_WAIT, GcpProvider
from proxyfleet.provisioner_gcp.provider_type import PROVIDER_TYPE
from proxyfleet.provisioner_gcp.pure.config import GcpProviderConfig
from proxyfleet.provisioner_gcp.settings import GcpProvisionerSettings as Settings
from proxyfleet.provisioner_gcp.watcher import PreemptionWatcher


def make_provider(entry: GcpProviderConfig, ctx: Context[Settings]) -> GcpProvider:
    return GcpProvider(entry.gcp, ctx.common.installation_id, entry.name)


def adjust(entry: GcpProviderConfig, settings: Settings) -> Settings:
    """A create may wait up to operation_timeout for its insert, then ADDRESS_WAIT for the
    external IP, without touching its proxy; a replica killed meanwhile hands the intent on
    after ack_wait. Republishing it before all that would only start a second waiter."""
    floor = entry.gcp.operation_timeout + ADDRESS_WAIT + settings.ack_wait
    return dataclasses.replace(settings, stale_after=max(settings.stale_after, floor))


SERVICE = provisioner_service(
    PROVIDER_TYPE,
    "GCE VMs",
    make_provider,
    Settings,
    adjust,
    lost=LostWatch("watcher", PreemptionWatcher, lambda s: s.preemption_interval),
)


def main() -> None:
    host.main(SERVICE)
