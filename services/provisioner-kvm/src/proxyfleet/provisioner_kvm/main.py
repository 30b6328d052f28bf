"""proxyfleet-provisioner-kvm: the shared provisioner runner with the KVM/libvirt adapter."""

from __future__ import annotations

import dataclasses

from proxyfleet.common import host
from proxyfleet.common.host import Context
from proxyfleet.common.runner import provisioner_service
from proxyfleet.common.store import Locks, Pins
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.provider_type import PROVIDER_TYPE
from proxyfleet.provisioner_kvm.pure.config import KvmProviderConfig
from proxyfleet.provisioner_kvm.settings import KvmProvisionerSettings as Settings
from proxyfleet.provisioner_kvm.shared import UPLOAD_WAIT, SharedPins, SharedUploads


def make_provider(entry: KvmProviderConfig, ctx: Context[Settings]) -> KvmProvider:
    """The adapter, with its placement pins and upload locks in Redis: every replica of
    the provider sees them."""
    ns = ctx.common.namespace
    return KvmProvider(
        entry.kvm,
        ctx.common.installation_id,
        clock=ctx.clock,
        trace_full=ctx.settings.libvirt_trace == "full",
        pins=SharedPins(Pins(ctx.redis, f"kvm:{entry.name}", namespace=ns)),
        uploads=SharedUploads(Locks(ctx.redis, namespace=ns), entry.name),
    )


def adjust(entry: KvmProviderConfig, settings: Settings) -> Settings:
    """A create may wait up to UPLOAD_WAIT for another replica's upload of its base image,
    then up to address_timeout for the guest, without touching its proxy; a replica killed
    meanwhile hands the intent on after ack_wait. Republishing it before then would only
    start a second waiter."""
    floor = UPLOAD_WAIT + entry.kvm.address_timeout + settings.ack_wait
    return dataclasses.replace(settings, stale_after=max(settings.stale_after, floor))


SERVICE = provisioner_service(
    PROVIDER_TYPE, "VMs on its libvirt hosts", make_provider, Settings, adjust
)


def main() -> None:
    host.main(SERVICE)
