"""The provider contract (tests/contract/provider_contract.py) for the Kubernetes adapter,
against the fake API server with the real kubernetes client."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.contract.provider_contract import (
    FOREIGN_INSTALLATION,
    MakeProvider,
    MakeSpec,
    PlantForeign,
    ProviderContract,
    ResourcesOf,
    new_proxy_id,
)
from tests.k8s.k8s_provider import NAMESPACE, kubeconfig_for, live, of_proxy, provider_for, spec_for

from proxyfleet.common.providers.port import Provider
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_k8s.adapter import K8sProvider


class TestK8sProviderContract(ProviderContract):
    @pytest.fixture
    async def make_provider(
        self, fake_kube: Any, tmp_path: Path, installation_id: str
    ) -> AsyncIterator[MakeProvider]:
        made: list[K8sProvider] = []
        kubeconfig = kubeconfig_for(fake_kube, tmp_path)

        def make() -> Provider:
            made.append(provider_for(kubeconfig, installation_id))
            return made[-1]

        yield make
        for p in made:
            await p.close()

    @pytest.fixture
    def make_spec(self, installation_id: str) -> MakeSpec:
        return lambda proxy_id: spec_for(proxy_id, installation_id)

    @pytest.fixture
    def resources_of(self, fake_kube: Any) -> ResourcesOf:
        async def of(proxy_id: str) -> list[str]:
            pods = live(of_proxy(fake_kube.objects("pods", NAMESPACE), proxy_id))
            return [str(p["metadata"]["uid"]) for p in pods]

        return of

    @pytest.fixture
    async def plant_foreign_resource(
        self, fake_kube: Any, tmp_path: Path
    ) -> AsyncIterator[PlantForeign]:
        foreign = provider_for(kubeconfig_for(fake_kube, tmp_path), FOREIGN_INSTALLATION)

        async def plant(proxy_id: str) -> None:
            await foreign.create(spec_for(proxy_id, FOREIGN_INSTALLATION))

        yield plant
        await foreign.close()

    @pytest.fixture
    def refused_spec(self, installation_id: str) -> tuple[ProxySpec, str]:
        return spec_for(new_proxy_id(), installation_id, zone="mars"), "not a zone of this provider"

    @pytest.fixture
    async def unreachable(
        self, tmp_path: Path, installation_id: str
    ) -> AsyncIterator[tuple[Provider, ProxySpec, str]]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        kubeconfig = tmp_path / "unreachable-kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: u, user: {}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u, namespace: proxies}}]\n"
        )
        provider = provider_for(kubeconfig, installation_id)
        yield provider, spec_for(new_proxy_id(), installation_id), "no answer"
        await provider.close()
