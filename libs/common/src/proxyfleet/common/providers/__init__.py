"""Provider types as plugins: the shared part of a provider entry, the file that lists
them, and the registry of installed types.

A provider type lives in its provisioner package (`provider_type.py`), registered by an
entry point; nothing here names one.
"""

from proxyfleet.common.providers.config import Name, Port, ProviderConfig, Seconds, Zone
from proxyfleet.common.providers.config_file import (
    ProvidersConfig,
    load_provider,
    load_providers_config,
    parse_providers_config,
)
from proxyfleet.common.providers.placement import (
    INVALID_PLACEMENT,
    NO_PLACEMENT,
    NoPlacement,
    PlacementValidator,
)
from proxyfleet.common.providers.provider_type import ParsedEntry, ProviderType
from proxyfleet.common.providers.registry import (
    ENTRY_POINT_GROUP,
    provider_types,
    register,
    unregister,
    validator_for,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "INVALID_PLACEMENT",
    "NO_PLACEMENT",
    "Name",
    "NoPlacement",
    "ParsedEntry",
    "PlacementValidator",
    "Port",
    "ProviderConfig",
    "ProviderType",
    "ProvidersConfig",
    "Seconds",
    "Zone",
    "load_provider",
    "load_providers_config",
    "parse_providers_config",
    "provider_types",
    "register",
    "unregister",
    "validator_for",
]
