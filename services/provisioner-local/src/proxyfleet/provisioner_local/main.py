"""proxyfleet-provisioner-local: the shared provisioner runner with the local adapter."""

from __future__ import annotations

from proxyfleet.common import host
from proxyfleet.common.providers_config import ProviderConfig
from proxyfleet.common.runner import RunnerSettings, provisioner_service
from proxyfleet.common.settings import CommonSettings
from proxyfleet.provisioner_local.adapter import LocalProvider, local_options


def make_provider(
    entry: ProviderConfig, common: CommonSettings, _: RunnerSettings
) -> LocalProvider:
    assert entry.local is not None  # the config check requires the section for its type
    return LocalProvider(local_options(entry.local, common.installation_id))


SERVICE = provisioner_service("local", "local processes", make_provider)


def main() -> None:
    host.main(SERVICE)
