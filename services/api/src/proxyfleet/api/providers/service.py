"""The providers config as the API uses it: validating selectors and counting proxies."""

from __future__ import annotations

from collections.abc import Mapping

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.providers import ProviderConfig, ProvidersConfig, validator_for
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase


class ProviderCatalog:
    """Answers "is this provider/zone configured?"; InvalidInput (a 400) when it is not."""

    def __init__(self, config: ProvidersConfig) -> None:
        self.config = config
        self._by_name = {p.name: p for p in config.providers}

    def get(self, name: str) -> ProviderConfig:
        provider = self._by_name.get(name)
        if provider is None:
            known = ", ".join(sorted(self._by_name))
            raise InvalidInput(
                f"unknown provider {name!r}; configured: {known}", code="unknown_provider"
            )
        return provider

    def zones_for(
        self, provider: ProviderConfig, zone: str | None, count: int, first_turn: int
    ) -> list[str]:
        """The zone of each of `count` new proxies: the given one, or (none given) the
        provider's zones in turn from `first_turn`, so creates without a zone spread."""
        if zone is not None:
            return [self.zone_for(provider, zone)] * count
        zones = provider.zones
        return [zones[(first_turn + i) % len(zones)] for i in range(count)]

    def zone_for(self, provider: ProviderConfig, zone: str | None) -> str:
        """The zone to use: the given one when the provider serves it, else its first."""
        if zone is None:
            return provider.zones[0]
        if zone not in provider.zones:
            raise InvalidInput(
                f"provider {provider.name!r} has no zone {zone!r}; "
                f"its zones: {', '.join(provider.zones)}",
                code="unknown_zone",
            )
        return zone

    def check_placement(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        """InvalidInput now for a placement the provider would refuse later (the proxy would
        fail), asked of the validator of the provider's type."""
        validator_for(provider.type).validate(provider, placement)

    def check_selector(self, provider: str | None, zone: str | None) -> None:
        """A lease selector must name a configured provider/zone (else it never matches)."""
        if provider is not None:
            self.zone_for(self.get(provider), zone)
        elif zone is not None and not any(zone in p.zones for p in self.config.providers):
            raise InvalidInput(f"no provider has zone {zone!r}", code="unknown_zone")


class ProviderService:
    def __init__(self, catalog: ProviderCatalog, registry: ProxyRegistry) -> None:
        self.catalog = catalog
        self._registry = registry

    async def counts(self) -> dict[str, dict[Phase, int]]:
        """Proxies per phase, per configured provider."""
        return {
            p.name: await self._registry.count_by_phase(p.name)
            for p in self.catalog.config.providers
        }
