"""proxyfleet-provisioner-local: the shared provisioner runner with the local adapter, and
the supervisor that restarts proxy processes that died."""

from __future__ import annotations

from proxyfleet.common import host
from proxyfleet.common.host import Context
from proxyfleet.common.host.spec import Run
from proxyfleet.common.runner import provisioner_service
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.provisioner_local.adapter import LocalProvider, local_options
from proxyfleet.provisioner_local.provider_type import PROVIDER_TYPE
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig
from proxyfleet.provisioner_local.settings import LocalProvisionerSettings
from proxyfleet.provisioner_local.supervisor import Supervisor


def make_provider(
    entry: LocalProviderConfig, ctx: Context[LocalProvisionerSettings]
) -> LocalProvider:
    return LocalProvider(local_options(entry.local, ctx.common.installation_id))


def supervisor(
    provider: LocalProvider, _: ProxyRegistry, ctx: Context[LocalProvisionerSettings]
) -> dict[str, Run]:
    s = ctx.settings
    if s.supervise_interval <= 0:
        return {}
    watch = Supervisor(provider, s.restart_policy, interval=s.supervise_interval, clock=ctx.clock)
    return {"supervisor": watch.run}


SERVICE = provisioner_service(
    PROVIDER_TYPE,
    "local processes",
    make_provider,
    LocalProvisionerSettings,
    components=supervisor,
)


def main() -> None:
    host.main(SERVICE)
