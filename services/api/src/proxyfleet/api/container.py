"""The services of one app, built once when its backends open, and their injection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from litestar.datastructures import State
from litestar.di import Provide

from proxyfleet.api.deps import AppDeps, Backends
from proxyfleet.api.leases.service import LeaseService
from proxyfleet.api.pools.service import PoolService
from proxyfleet.api.providers.entries import ProviderEntryService
from proxyfleet.api.providers.service import ProviderCatalog, ProviderService
from proxyfleet.api.proxies.intents import Messages
from proxyfleet.api.proxies.service import ProxyService
from proxyfleet.api.settings import ApiSettings
from proxyfleet.common.core.errors import TemporaryError


@dataclass(frozen=True, slots=True)
class Services:
    backends: Backends
    proxies: ProxyService
    leases: LeaseService
    providers: ProviderService
    pools: PoolService
    entries: ProviderEntryService


def build_services(settings: ApiSettings, deps: AppDeps, backends: Backends) -> Services:
    catalog = ProviderCatalog(deps.providers)
    messages = Messages(backends.publisher)
    return Services(
        backends=backends,
        proxies=ProxyService(
            backends.registry,
            messages,
            catalog,
            deps.clock,
            backends.pools,
            settings.idempotency_ttl,
        ),
        leases=LeaseService(
            backends.leases,
            backends.registry,
            catalog,
            settings.default_lease_ttl,
            backends.pools,
        ),
        providers=ProviderService(catalog, backends.registry),
        pools=PoolService(backends.pools, deps.providers),
        entries=ProviderEntryService(catalog, backends.entries),
    )


NOT_YET = "the API is still connecting to Redis and NATS"


def maybe_services(state: State) -> Services | None:
    """The services once the backends are open, else None."""
    return cast("Services | None", state.get("services"))


def services_of(state: State) -> Services:
    """The services; a TemporaryError (503, Retry-After) while the backends are not open."""
    services = maybe_services(state)
    if services is None:
        raise TemporaryError(NOT_YET, retry_after=1.0)
    return services


def _proxies(state: State) -> ProxyService:
    return services_of(state).proxies


def _leases(state: State) -> LeaseService:
    return services_of(state).leases


def _providers(state: State) -> ProviderService:
    return services_of(state).providers


def _pools(state: State) -> PoolService:
    return services_of(state).pools


def _entries(state: State) -> ProviderEntryService:
    return services_of(state).entries


def _services(state: State) -> Services:
    return services_of(state)


DEPENDENCIES = {
    "proxy_service": Provide(_proxies, sync_to_thread=False),
    "lease_service": Provide(_leases, sync_to_thread=False),
    "provider_service": Provide(_providers, sync_to_thread=False),
    "pool_service": Provide(_pools, sync_to_thread=False),
    "provider_entry_service": Provide(_entries, sync_to_thread=False),
    "services": Provide(_services, sync_to_thread=False),
}
