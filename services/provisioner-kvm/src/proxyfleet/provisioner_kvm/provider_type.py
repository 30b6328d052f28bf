"""The provider type `kvm`, registered by this package's entry point (proxyfleet.providers):
what the API and every service need to parse and check a kvm entry. Imports no libvirt."""

from __future__ import annotations

from proxyfleet.common.providers import ProviderType
from proxyfleet.provisioner_kvm.pure.config import KvmProviderConfig, check_kvm_provider
from proxyfleet.provisioner_kvm.pure.placement import KvmPlacementValidator

PROVIDER_TYPE = ProviderType(
    name="kvm",
    config=KvmProviderConfig,
    placement=KvmPlacementValidator(),
    check=check_kvm_provider,
)
