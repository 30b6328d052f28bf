"""GET /v1/providers (client scope)."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency

from proxyfleet.api.http.auth import Scope
from proxyfleet.api.http.errors import error_responses
from proxyfleet.api.providers.schemas import ProviderList, ProviderOut
from proxyfleet.api.providers.service import ProviderService


class ProviderController(Controller):
    path = "/providers"
    tags = ["providers"]
    opt = {"scope": Scope.CLIENT}

    @get("/", responses=error_responses(401, 403, 503))
    async def list_providers(
        self, provider_service: NamedDependency[ProviderService]
    ) -> ProviderList:
        """The configured provider instances with their zones and proxy counts by phase."""
        counts = await provider_service.counts()
        return ProviderList(
            items=[
                ProviderOut(
                    name=p.name,
                    type=p.type,
                    zones=list(p.zones),
                    counts={phase.value: n for phase, n in counts[p.name].items()},
                    max_proxies=p.max_proxies,
                )
                for p in provider_service.catalog.config.providers
            ]
        )
