"""The provider type `static`, registered by this package's entry point
(proxyfleet.providers): what the API and every service need to parse and check a static
entry, and to read a line an admin adds at run time."""

from __future__ import annotations

from proxyfleet.common.providers import NO_PLACEMENT, ProviderType
from proxyfleet.provisioner_static.pure.config import (
    StaticProviderConfig,
    check_static_provider,
    parse_entry,
)

# No placement from the API or pools: a static proxy's upstream comes from its sources.
PROVIDER_TYPE = ProviderType(
    name="static",
    config=StaticProviderConfig,
    placement=NO_PLACEMENT,
    check=check_static_provider,
    parse_entry=parse_entry,
)
