"""The domain layer and the adapter's list/delete against libvirt's built-in test driver
(`test:///default`: real libvirt API and XML validation, no daemon, in-process state)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.kvm.helpers import TEST_DRIVER_HOST as HOST
from tests.kvm.helpers import TEST_DRIVER_URI as URI

from proxyfleet.common.core.errors import PermanentProviderError
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import DirectConnector, HostSession
from proxyfleet.provisioner_kvm.pure.config import KvmImage, KvmSettings
from proxyfleet.provisioner_kvm.pure.domain_xml import DomainSpec, render_domain_xml
from proxyfleet.provisioner_kvm.pure.names import domain_name, overlay_volume_name
from proxyfleet.provisioner_kvm.pure.volume_xml import seed_volume_xml
from proxyfleet.provisioner_kvm.volumes import Pool

SETTINGS = KvmSettings(
    hosts=[HOST],
    images={"img": KvmImage(url="file:///nonexistent.qcow2")},
    default_image="img",
    address_timeout=1.0,
)


def _spec(proxy_id: str, installation_id: str = "inst-test", created_at: float = 1000.0) -> str:
    return render_domain_xml(
        DomainSpec(
            name=domain_name(proxy_id),
            proxy_id=proxy_id,
            installation_id=installation_id,
            created_at=created_at,
            vcpus=1,
            memory_mib=256,
            disk_path=f"/default-pool/{proxy_id}.qcow2",
            disk_format="qcow2",
            seed_path=f"/default-pool/{proxy_id}.iso",
            network="default",
            firmware="bios",
            domain_type="qemu",
        )
    )


@pytest.fixture
async def session() -> AsyncIterator[HostSession]:
    s = HostSession(HOST, DirectConnector(URI), trace_full=True)
    yield s
    await s.close()


async def test_define_start_identify_address_remove(session: HostSession) -> None:
    domains = Domains(session)
    name = domain_name("ptd1")
    assert await domains.state(name) is None
    await domains.define_and_start(name, _spec("ptd1"))
    state = await domains.state(name)
    assert state is not None
    assert state.active
    assert state.identity is not None
    assert (state.identity.proxy_id, state.identity.installation_id) == ("ptd1", "inst-test")
    assert state.identity.created_at == 1000.0
    # The test driver makes up an address for each interface, like a guest agent would.
    address = await domains.address(name, "default")
    assert address is not None
    assert address.count(".") == 3
    assert await domains.remove(name)
    assert await domains.state(name) is None
    assert not await domains.remove(name)


async def test_list_by_metadata_skips_foreign_domains(session: HostSession) -> None:
    domains = Domains(session)
    await domains.define_and_start(domain_name("ptd2"), _spec("ptd2"))
    await domains.define_and_start(domain_name("ptd3"), _spec("ptd3", "other-inst"))
    try:
        ours = {s.identity.proxy_id: s for s in await domains.list_ours() if s.identity}
        # The test driver's own domain "test" has no metadata: not listed.
        assert "test" not in {s.name for s in ours.values()}
        assert ours["ptd2"].identity is not None
        assert ours["ptd2"].identity.installation_id == "inst-test"
        assert ours["ptd3"].identity is not None
        assert ours["ptd3"].identity.installation_id == "other-inst"
    finally:
        await domains.remove(domain_name("ptd2"))
        await domains.remove(domain_name("ptd3"))


async def test_adapter_lists_and_deletes_with_volumes() -> None:
    provider = KvmProvider(SETTINGS, "inst-test", connector_for=lambda _h: DirectConnector(URI))
    session = provider.sessions["t1"]
    try:
        await Domains(session).define_and_start(domain_name("ptd4"), _spec("ptd4"))
        pool = Pool(session)
        overlay = overlay_volume_name("ptd4")
        await session.run(
            "storageVolCreateXML",
            lambda c: c.storagePoolLookupByName("default-pool").createXML(
                seed_volume_xml(overlay, 1024), 0
            ),
        )
        listed = [r for r in await provider.list_managed() if r.proxy_id == "ptd4"]
        assert [(r.resource_id, r.zone, r.created_at) for r in listed] == [
            ("t1/pf-ptd4", "test-a", 1000.0)
        ]
        await provider.delete("ptd4", "t1/pf-ptd4")
        assert await Domains(session).state(domain_name("ptd4")) is None
        assert await pool.path_of(overlay) is None
        await provider.delete("ptd4", "t1/pf-ptd4")  # idempotent
        await provider.delete("ptd4", "")  # no resource id: every host is searched
        with pytest.raises(PermanentProviderError, match="no host named"):
            await provider.delete("ptd4", "nohost/pf-ptd4")
    finally:
        await provider.close()


async def test_create_refuses_a_foreign_domain_with_the_same_name() -> None:
    provider = KvmProvider(SETTINGS, "inst-test", connector_for=lambda _h: DirectConnector(URI))
    session = provider.sessions["t1"]
    xml = _spec("ptd5").replace("<proxyfleet:proxy-id>ptd5<", "<proxyfleet:proxy-id>other<")
    try:
        await Domains(session).define_and_start(domain_name("ptd5"), xml)
        spec = ProxySpec(
            proxy_id="ptd5",
            installation_id="inst-test",
            zone="test-a",
            username="u",
            password="p",
        )
        with pytest.raises(PermanentProviderError, match="not this proxy's"):
            await provider.create(spec)
    finally:
        await Domains(session).remove(domain_name("ptd5"))
        await provider.close()
