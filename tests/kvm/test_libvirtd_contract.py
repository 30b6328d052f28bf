"""The provider contract (tests/contract) against the session's real libvirtd, reached over
SSH through the in-process server as in production, with a storage pool of each test's own.

No guest OS boots (the base image is an empty qcow2), so every create ends in the temporary
"no address" error once the domain runs; the contract's checks on resources still hold."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import AsyncIterator
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
from tests.kvm.conftest import LibvirtDaemon
from tests.kvm.contract_helpers import define_domain, domain_uuids, domain_xml, remove_domains

from proxyfleet.common.core.errors import TemporaryProviderError
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.wire.models import Provisioned, ProxySpec
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.pure.config import KvmHost, KvmImage, KvmSettings


@pytest.fixture(scope="module")
def empty_image(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An empty 64 MiB qcow2 and its sha256."""
    path = tmp_path_factory.mktemp("contract-image") / "empty.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), "64M"], check=True)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def settings(host: KvmHost, image: tuple[Path, str], cache: Path) -> KvmSettings:
    return KvmSettings(
        hosts=[host],
        images={"empty": KvmImage(url=f"file://{image[0]}", sha256=image[1], firmware="bios")},
        default_image="empty",
        memory_mib=128,
        disk_gib=1,
        image_cache_dir=str(cache),
        address_timeout=0.5,
    )


class TestLibvirtdProviderContract(ProviderContract):
    @pytest.fixture
    async def make_provider(
        self,
        kvm_host: KvmHost,
        empty_image: tuple[Path, str],
        tmp_path: Path,
        installation_id: str,
    ) -> AsyncIterator[MakeProvider]:
        made: list[KvmProvider] = []

        def make() -> KvmProvider:
            config = settings(kvm_host, empty_image, tmp_path)
            provider = KvmProvider(config, installation_id, address_poll_interval=0.1)
            made.append(provider)
            return provider

        yield make
        cleaner = make()  # no VM of this test outlives it
        for resource in await cleaner.list_managed():
            await cleaner.delete(resource.proxy_id, resource.resource_id)
        for provider in made:
            await provider.close()

    @pytest.fixture
    def make_spec(self, kvm_host: KvmHost, installation_id: str) -> MakeSpec:
        return lambda proxy_id: ProxySpec(
            proxy_id=proxy_id,
            installation_id=installation_id,
            zone=kvm_host.zone,
            username="u",
            password="pw-contract",
        )

    async def create(self, provider: Provider, spec: ProxySpec) -> Provisioned | None:
        with pytest.raises(TemporaryProviderError, match="no address"):
            await provider.create(spec)
        return None

    @pytest.fixture
    def resources_of(self, libvirtd: LibvirtDaemon) -> ResourcesOf:
        return lambda proxy_id: domain_uuids(libvirtd.uri, proxy_id)

    @pytest.fixture
    async def plant_foreign_resource(self, libvirtd: LibvirtDaemon) -> AsyncIterator[PlantForeign]:
        """A domain of another installation, defined (not started) on the same host."""
        planted: list[str] = []

        async def plant(proxy_id: str) -> None:
            planted.append(proxy_id)
            xml = domain_xml(
                proxy_id, FOREIGN_INSTALLATION, libvirtd.network_name, str(libvirtd.pool_path)
            )
            await define_domain(libvirtd.uri, xml)

        yield plant
        await remove_domains(libvirtd.uri, planted)

    @pytest.fixture
    def refused_spec(self, make_spec: MakeSpec) -> tuple[ProxySpec, str]:
        spec = make_spec("pctplace")
        spec.placement = {"colour": "red"}
        return spec, "placement: unknown key"

    @pytest.fixture
    async def unreachable(
        self,
        kvm_host: KvmHost,
        empty_image: tuple[Path, str],
        tmp_path: Path,
        installation_id: str,
        unused_tcp_port: int,
    ) -> AsyncIterator[tuple[Provider, ProxySpec, str]]:
        """The host's SSH address has nobody listening (loopback): the host is down."""
        down = KvmHost(
            **{
                **{f: getattr(kvm_host, f) for f in kvm_host.__struct_fields__},
                "ssh_address": f"127.0.0.1:{unused_tcp_port}",
            }
        )
        provider = KvmProvider(settings(down, empty_image, tmp_path), installation_id)
        spec = ProxySpec(
            proxy_id="pctdown",
            installation_id=installation_id,
            zone=down.zone,
            username="u",
            password="pw",
        )
        yield provider, spec, f"host {down.name}"
        await provider.close()
