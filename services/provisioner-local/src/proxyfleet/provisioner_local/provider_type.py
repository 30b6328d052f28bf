"""The provider type `local`, registered by this package's entry point
(proxyfleet.providers): what the API and every service need to parse and check a local
entry."""

from __future__ import annotations

from proxyfleet.common.providers import ProviderType
from proxyfleet.provisioner_local.pure.config import (
    LocalPlacementValidator,
    LocalProviderConfig,
    check_local_provider,
)

PROVIDER_TYPE = ProviderType(
    name="local",
    config=LocalProviderConfig,
    placement=LocalPlacementValidator(),
    check=check_local_provider,
)
