"""Placement validators: is this placement one the provider accepts?

A proxy's `placement` is a free-form string map that only its provider reads. The API asks
the validator of the provider's type (`registry.validator_for`) before storing anything,
so a placement the provisioner would refuse later is a 400 now. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.providers.config import ProviderConfig

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
