"""The provider contract (tests/contract) against libvirt's test driver (`test:///default`,
in-process state shared by every connection of this process).

The test driver cannot upload volumes, so a first create's build is done here the way the
adapter does it (a domain carrying this proxy's metadata); from there on every call is the
adapter's: it adopts that domain, lists, deletes, reports its errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import libvirt
import pytest
from tests.contract.provider_contract import (
    FOREIGN_INSTALLATION,
    MakeProvider,
    MakeSpec,
    PlantForeign,
    ProviderContract,
    ResourcesOf,
)
from tests.kvm.contract_helpers import define_domain, domain_uuids, domain_xml, remove_domains
from tests.kvm.helpers import TEST_DRIVER_HOST as HOST
from tests.kvm.helpers import TEST_DRIVER_URI as URI

from proxyfleet.common.providers.port import Provider
from proxyfleet.common.wire.models import Provisioned, ProxySpec
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.host import DirectConnector
from proxyfleet.provisioner_kvm.pure.config import KvmHost, KvmImage, KvmSettings


def settings(host: KvmHost = HOST) -> KvmSettings:
    return KvmSettings(
        hosts=[host],
        images={"img": KvmImage(url="file:///nonexistent.qcow2")},
        default_image="img",
        address_timeout=1.0,
    )


class TestTestDriverProviderContract(ProviderContract):
    @pytest.fixture(autouse=True)
    def shared_state(self) -> Iterator[None]:
        """The driver's state lives while a connection is open: one for the whole test, so
        the adapter's connections and the test's see the same domains."""
        conn = libvirt.open(URI)
        yield
        conn.close()

    @pytest.fixture
    async def make_provider(self, installation_id: str) -> AsyncIterator[MakeProvider]:
        made: list[KvmProvider] = []

        def make() -> KvmProvider:
            provider = KvmProvider(
                settings(), installation_id, connector_for=lambda _h: DirectConnector(URI)
            )
            made.append(provider)
            return provider

        yield make
        cleaner = make()
        for resource in await cleaner.list_managed():
            await cleaner.delete(resource.proxy_id, resource.resource_id)
        for provider in made:
            await provider.close()

    @pytest.fixture
    def make_spec(self, installation_id: str) -> MakeSpec:
        return lambda proxy_id: ProxySpec(
            proxy_id=proxy_id,
            installation_id=installation_id,
            zone=HOST.zone,
            username="u",
            password="pw",
        )

    async def create(self, provider: Provider, spec: ProxySpec) -> Provisioned | None:
        if not await domain_uuids(URI, spec.proxy_id):
            xml = domain_xml(spec.proxy_id, spec.installation_id, HOST.network, "/default-pool")
            await define_domain(URI, xml, start=True)
        return await provider.create(spec)

    @pytest.fixture
    def resources_of(self) -> ResourcesOf:
        return lambda proxy_id: domain_uuids(URI, proxy_id)

    @pytest.fixture
    async def plant_foreign_resource(self) -> AsyncIterator[PlantForeign]:
        planted: list[str] = []

        async def plant(proxy_id: str) -> None:
            planted.append(proxy_id)
            xml = domain_xml(proxy_id, FOREIGN_INSTALLATION, HOST.network, "/default-pool")
            await define_domain(URI, xml, start=True)

        yield plant
        await remove_domains(URI, planted)

    @pytest.fixture
    def refused_spec(self, make_spec: MakeSpec) -> tuple[ProxySpec, str]:
        spec = make_spec("pctplace")
        spec.placement = {"colour": "red"}
        return spec, "placement: unknown key"

    @pytest.fixture
    async def unreachable(
        self, installation_id: str, make_spec: MakeSpec
    ) -> AsyncIterator[tuple[Provider, ProxySpec, str]]:
        """A libvirtd socket nobody listens on: the host is down."""
        down = DirectConnector("qemu+unix:///system?socket=/nonexistent/libvirt-sock")
        provider = KvmProvider(settings(), installation_id, connector_for=lambda _h: down)
        yield provider, make_spec("pctdown"), "host t1"
        await provider.close()
