"""The provider type `gcp`, registered by this package's entry point (proxyfleet.providers):
what the API and every service need to parse and check a gcp entry. Imports no Google SDK."""

from __future__ import annotations

from proxyfleet.common.providers import ProviderType
from proxyfleet.provisioner_gcp.pure.config import (
    GcpPlacementValidator,
    GcpProviderConfig,
    check_gcp_provider,
)

PROVIDER_TYPE = ProviderType(
    name="gcp",
    config=GcpProviderConfig,
    placement=GcpPlacementValidator(),
    check=check_gcp_provider,
)
