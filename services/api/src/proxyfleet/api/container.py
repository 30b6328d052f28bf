"""The services of one app, built once when its backends open, and their injection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from litestar.datastructures import State
from litestar.di import Provide

from proxyfleet.api.deps import AppDeps, Backends
from proxyfleet.api.events import Messages
from proxyfleet.api.leases.service import LeaseService
from proxyfleet.api.providers.service import ProviderCatalog, ProviderService
from proxyfleet.api.proxies.service import ProxyService
from proxyfleet.api.settings import ApiSettings


@dataclass(frozen=True, slots=True)
class Services:
    backends: Backends
    proxies: ProxyService
    leases: LeaseService
    providers: ProviderService


def build_services(settings: ApiSettings, deps: AppDeps, backends: Backends) -> Services:
    catalog = ProviderCatalog(deps.providers)
    messages = Messages(backends.publisher)
    return Services(
        backends=backends,
        proxies=ProxyService(
            backends.registry, messages, catalog, deps.clock, settings.idempotency_ttl
        ),
        leases=LeaseService(
            backends.leases, backends.registry, catalog, settings.default_lease_ttl
        ),
        providers=ProviderService(catalog, backends.registry),
    )


def services_of(state: State) -> Services:
    return cast(Services, state.services)


def _proxies(state: State) -> ProxyService:
    return services_of(state).proxies


def _leases(state: State) -> LeaseService:
    return services_of(state).leases


def _providers(state: State) -> ProviderService:
    return services_of(state).providers


def _services(state: State) -> Services:
    return services_of(state)


DEPENDENCIES = {
    "proxy_service": Provide(_proxies, sync_to_thread=False),
    "lease_service": Provide(_leases, sync_to_thread=False),
    "provider_service": Provide(_providers, sync_to_thread=False),
    "services": Provide(_services, sync_to_thread=False),
}
