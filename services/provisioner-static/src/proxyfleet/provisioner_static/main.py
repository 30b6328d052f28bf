"""proxyfleet-provisioner-static: the shared provisioner runner with the static adapter,
and the syncer that keeps the registry what the provider's sources list."""

from __future__ import annotations

from proxyfleet.common import host
from proxyfleet.common.host import Context
from proxyfleet.common.host.spec import Run
from proxyfleet.common.runner import provisioner_service
from proxyfleet.common.store import PoolStore, ProviderEntries, ProxyRegistry
from proxyfleet.provisioner_static.adapter import StaticProvider
from proxyfleet.provisioner_static.provider_type import PROVIDER_TYPE
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig
from proxyfleet.provisioner_static.secret_files import with_secrets
from proxyfleet.provisioner_static.settings import StaticProvisionerSettings
from proxyfleet.provisioner_static.syncer import Syncer


def make_provider(
    entry: StaticProviderConfig, ctx: Context[StaticProvisionerSettings]
) -> StaticProvider:
    return StaticProvider(with_secrets(entry))


def syncer(
    _: StaticProvider, registry: ProxyRegistry, ctx: Context[StaticProvisionerSettings]
) -> dict[str, Run]:
    entry = with_secrets(
        ctx.providers.of_type(
            ctx.settings.provider, StaticProviderConfig, ctx.common.providers_config
        )
    )
    namespace = ctx.common.namespace
    sync = Syncer(
        entry,
        registry=registry,
        pools=PoolStore(ctx.redis, ctx.clock, namespace=namespace),
        entries=ProviderEntries(ctx.redis, namespace=namespace),
        settings=ctx.settings,
        clock=ctx.clock,
    )
    return {"syncer": sync.run}


SERVICE = provisioner_service(
    PROVIDER_TYPE,
    "entries of its sources (upstreams it never starts or stops)",
    make_provider,
    StaticProvisionerSettings,
    components=syncer,
)


def main() -> None:
    host.main(SERVICE)
