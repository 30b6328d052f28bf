"""Placement validators, one per provider type: is this placement one the provider accepts?

A proxy's `placement` is a free-form string map that only its provider reads. The API asks
`validator_for(provider.type)` before storing anything, so a placement the provisioner would
refuse later is a 400 now; the API never branches on a provider type. A new provider type
adds its validator to `_VALIDATORS` (or calls `register` before the API starts). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from proxyfleet.common.errors import InvalidInput
from proxyfleet.common.gcp_config import GcpPlacementValidator
from proxyfleet.common.kvm_placement import KvmPlacementValidator
from proxyfleet.common.local_egress import placement_address
from proxyfleet.common.providers_config import ProviderConfig

INVALID_PLACEMENT = "invalid_placement"
"""The error code of every placement refusal (clients see it in the 400 body)."""


class PlacementValidator(Protocol):
    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        """Return if the provider accepts `placement`; else raise InvalidInput (code
        invalid_placement) whose message names the bad key."""


class NoPlacement:
    """For provider types that read no placement: any key is refused."""

    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        if placement:
            raise InvalidInput(
                f"provider {provider.name!r} (type {provider.type}) takes no placement",
                code=INVALID_PLACEMENT,
            )


NO_PLACEMENT = NoPlacement()


class LocalPlacementValidator:
    """Local proxies read one key, `egress_address`: a 127/8 address to leave from."""

    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        try:
            placement_address(placement)
        except ValueError as exc:
            raise InvalidInput(
                f"provider {provider.name!r}: {exc}", code=INVALID_PLACEMENT
            ) from None


_VALIDATORS: dict[str, PlacementValidator] = {
    "local": LocalPlacementValidator(),
    "kvm": KvmPlacementValidator(),
    "gcp": GcpPlacementValidator(),
}


def register(provider_type: str, validator: PlacementValidator) -> None:
    """Use `validator` for every provider of `provider_type` (replacing any earlier one)."""
    _VALIDATORS[provider_type] = validator


def validator_for(provider_type: str) -> PlacementValidator:
    """The validator of a provider type; a type without one takes no placement."""
    return _VALIDATORS.get(provider_type, NO_PLACEMENT)
