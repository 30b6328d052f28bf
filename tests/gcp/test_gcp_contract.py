"""The provider contract (tests/contract/provider_contract.py) for the GCP adapter, against
the fake GCE with the real google-cloud-compute client."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
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
from tests.gcp.gcp_provider import instances_of, provider_for, spec_for

from proxyfleet.common.providers.port import Provider
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_gcp.adapter import GcpProvider


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TestGcpProviderContract(ProviderContract):
    @pytest.fixture
    async def make_provider(
        self, fake_gce: Any, installation_id: str
    ) -> AsyncIterator[MakeProvider]:
        made: list[GcpProvider] = []

        def make() -> Provider:
            made.append(provider_for(fake_gce, installation_id))
            return made[-1]

        yield make
        for p in made:
            await p.close()

    @pytest.fixture
    def make_spec(self, installation_id: str) -> MakeSpec:
        return lambda proxy_id: spec_for(proxy_id, installation_id)

    @pytest.fixture
    def resources_of(self, fake_gce: Any) -> ResourcesOf:
        async def of(proxy_id: str) -> list[str]:
            return [str(i["resource"]["id"]) for i in instances_of(fake_gce, proxy_id)]

        return of

    @pytest.fixture
    async def plant_foreign_resource(self, fake_gce: Any) -> AsyncIterator[PlantForeign]:
        foreign = provider_for(fake_gce, FOREIGN_INSTALLATION)

        async def plant(proxy_id: str) -> None:
            await foreign.create(spec_for(proxy_id, FOREIGN_INSTALLATION))

        yield plant
        await foreign.close()

    @pytest.fixture
    def refused_spec(self, installation_id: str) -> tuple[ProxySpec, str]:
        return spec_for(new_proxy_id(), installation_id, zone="mars"), "no GCE zone"

    @pytest.fixture
    async def unreachable(
        self, fake_gce: Any, installation_id: str
    ) -> AsyncIterator[tuple[Provider, ProxySpec, str]]:
        provider = provider_for(
            fake_gce, installation_id, api_endpoint=f"http://127.0.0.1:{_closed_port()}"
        )
        yield provider, spec_for(new_proxy_id(), installation_id), "no answer"
        await provider.close()
