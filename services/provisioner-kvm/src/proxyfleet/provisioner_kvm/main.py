"""proxyfleet-provisioner-kvm: the shared provisioner runner with the KVM/libvirt adapter."""

from __future__ import annotations

import dataclasses

from proxyfleet.common import host
from proxyfleet.common.providers_config import ProviderConfig
from proxyfleet.common.runner import provisioner_service
from proxyfleet.common.settings import CommonSettings
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.settings import KvmProvisionerSettings as Settings


def make_provider(entry: ProviderConfig, common: CommonSettings, settings: Settings) -> KvmProvider:
    assert entry.kvm is not None  # the config check requires the section for its type
    return KvmProvider(
        entry.kvm, common.installation_id, trace_full=settings.libvirt_trace == "full"
    )


def adjust(entry: ProviderConfig, settings: Settings) -> Settings:
    """A create waits up to address_timeout for the guest without touching its proxy; a
    replica killed meanwhile hands the intent on after ack_wait. Republishing it before
    then would only start a second waiter."""
    assert entry.kvm is not None
    floor = entry.kvm.address_timeout + settings.ack_wait
    return dataclasses.replace(settings, stale_after=max(settings.stale_after, floor))


SERVICE = provisioner_service("kvm", "VMs on its libvirt hosts", make_provider, Settings, adjust)


def main() -> None:
    host.main(SERVICE)
