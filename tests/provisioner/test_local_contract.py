"""The provider contract (tests/contract) against the local provider: real proxy.py
processes under a state dir of this test's own."""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.contract.provider_contract import (
    FOREIGN_INSTALLATION,
    MakeProvider,
    MakeSpec,
    PlantForeign,
    ProviderContract,
    ResourcesOf,
)

from proxyfleet.common.providers.port import Provider
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_local import commands
from proxyfleet.provisioner_local.adapter import LocalProvider
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.processes import find_session_leader

ENGINE = "proxy.py"
"""The engine that starts fastest; both engines share everything the contract covers."""


def local_spec(proxy_id: str, installation_id: str) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id,
        installation_id=installation_id,
        zone="local",
        username="contract",
        password=secrets.token_urlsafe(18),
    )


class TestLocalProviderContract(ProviderContract):
    @pytest.fixture
    def make_provider(
        self, make_local_provider: Callable[..., LocalProvider], installation_id: str
    ) -> MakeProvider:
        return lambda: make_local_provider(ENGINE, installation_id=installation_id)

    @pytest.fixture
    def make_spec(self, installation_id: str) -> MakeSpec:
        return lambda proxy_id: local_spec(proxy_id, installation_id)

    @pytest.fixture
    def resources_of(self, proxy_state_dir: Path, installation_id: str) -> ResourcesOf:
        """The engine processes of the proxy, found by their command lines."""

        async def pids(proxy_id: str) -> list[str]:
            folder = ProxyFolder(proxy_state_dir / installation_id / proxy_id, proxy_id)
            found = await asyncio.to_thread(find_session_leader, commands.engine_signatures(folder))
            return [str(pid) for pid in found]

        return pids

    @pytest.fixture
    def plant_foreign_resource(
        self, make_local_provider: Callable[..., LocalProvider]
    ) -> PlantForeign:
        """A running proxy of another installation in the same state dir."""

        async def plant(proxy_id: str) -> None:
            theirs = make_local_provider(ENGINE, installation_id=FOREIGN_INSTALLATION)
            await theirs.create(local_spec(proxy_id, FOREIGN_INSTALLATION))

        return plant

    @pytest.fixture
    def refused_spec(self, make_spec: MakeSpec) -> tuple[ProxySpec, str]:
        return make_spec("../escape"), "proxy id"

    @pytest.fixture
    def unreachable(
        self, make_local_provider: Callable[..., LocalProvider], installation_id: str
    ) -> Iterator[tuple[Provider, ProxySpec, str]]:
        """The local backend is this machine: what it can lack for now is a free port."""
        with socket.create_server(("127.0.0.1", 0)) as taken:
            port = int(taken.getsockname()[1])
            provider = make_local_provider(
                ENGINE, installation_id=installation_id, port_range=(port, port)
            )
            yield provider, local_spec("pctnoport", installation_id), "no free port"
