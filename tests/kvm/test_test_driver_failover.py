"""Placement among the hosts of one zone, against libvirt's test driver: a host that is down
gives its share to the others, and a redelivered create finds its domain wherever it is.

Each up host is a test driver of its own (`test:///<node.xml>`: a private instance per
connection, which the adapter keeps open), so a domain on one host is not seen on another.
The test driver has no volume upload: the base image is planted in each pool as the
adapter leaves it after an upload, and the seed upload only creates the volume."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, BinaryIO

import libvirt
import pytest
from prometheus_client import REGISTRY
from tests.kvm.helpers import TEST_DRIVER_HOST

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import DirectConnector, HostSession
from proxyfleet.provisioner_kvm.pure.config import KvmHost, KvmImage, KvmSettings
from proxyfleet.provisioner_kvm.pure.domain_xml import DomainSpec, render_domain_xml
from proxyfleet.provisioner_kvm.pure.names import base_volume_name, domain_name
from proxyfleet.provisioner_kvm.pure.placement import resolve_image
from proxyfleet.provisioner_kvm.pure.volume_xml import base_volume_xml, seed_volume_xml
from proxyfleet.provisioner_kvm.volumes import COMPLETE_SUFFIX, Pool

ZONE = "test-a"
DOWN_URI = "qemu+unix:///system?socket=/nonexistent/libvirt-sock"
"""A libvirtd socket nobody listens on: the host is down."""
NODE_XML = """<node>
  <network><name>default</name><bridge name='virbr0'/><forward mode='nat'/>
    <ip address='192.168.122.1' netmask='255.255.255.0'>
      <dhcp><range start='192.168.122.2' end='192.168.122.254'/></dhcp></ip></network>
  <pool type='dir'><name>default-pool</name><target><path>/default-pool</path></target></pool>
</node>
"""
IMAGES = {"img": KvmImage(url="file:///nonexistent.qcow2", firmware="bios")}


def host(name: str, **fields: Any) -> KvmHost:
    base = {f: getattr(TEST_DRIVER_HOST, f) for f in TEST_DRIVER_HOST.__struct_fields__}
    return KvmHost(**{**base, "name": name, "zone": ZONE, **fields})


def spec(proxy_id: str) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id, installation_id="inst-fo", zone=ZONE, username="u", password="pw"
    )


def connects(name: str, result: str) -> float:
    labels = {"host": name, "result": result}
    return REGISTRY.get_sample_value("proxyfleet_kvm_ssh_connects_total", labels) or 0.0


async def domains_on(session: HostSession) -> list[str]:
    return sorted(n for n in await Domains(session).names() if n.startswith("pf-"))


@pytest.fixture(autouse=True)
def upload_creates_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test driver refuses virStorageVolUpload: create the volume, send nothing."""

    async def upload(self: Pool, volume: str, xml: str, src: BinaryIO, size: int) -> str:
        def create(conn: libvirt.virConnect) -> str:
            return str(conn.storagePoolLookupByName(self.name).createXML(xml, 0).path())

        return await self._s.run("storageVolCreateXML", create, volume=volume)

    monkeypatch.setattr(Pool, "upload", upload)


async def plant_base_image(session: HostSession) -> None:
    """The base image and its upload marker, as a finished upload leaves them."""
    base = base_volume_name(resolve_image({}, IMAGES, "img"))
    await Pool(session).upload(base, base_volume_xml(base, 1 << 20, "qcow2"), None, 0)  # type: ignore[arg-type]
    marker = base + COMPLETE_SUFFIX
    await Pool(session).upload(marker, seed_volume_xml(marker, 1), None, 0)  # type: ignore[arg-type]


class Zone:
    """Hosts t1 and t2 up (a test driver each), t3 down, all serving ZONE."""

    def __init__(
        self, node_xml: Path, clock: ManualClock, cache: Path, limits: tuple[int, int] | None
    ) -> None:
        uris = {"t1": f"test://{node_xml}", "t2": f"test://{node_xml}", "t3": DOWN_URI}
        t1, t2 = limits or (None, None)
        self.settings = KvmSettings(
            hosts=[host("t1", max_proxies=t1), host("t2", max_proxies=t2), host("t3")],
            images=IMAGES,
            default_image="img",
            address_timeout=0.3,
            host_retry_after=30.0,
            image_cache_dir=str(cache),
        )
        self.provider = KvmProvider(
            self.settings,
            "inst-fo",
            connector_for=lambda h: DirectConnector(uris[h.name]),
            clock=clock,
            address_poll_interval=0.05,
        )
        self.t1, self.t2 = self.provider.sessions["t1"], self.provider.sessions["t2"]


@pytest.fixture
def node_xml(tmp_path: Path) -> Path:
    path = tmp_path / "node.xml"
    path.write_text(NODE_XML)
    return path


@pytest.fixture
async def zone(node_xml: Path, tmp_path: Path) -> AsyncIterator[Zone]:
    z = Zone(node_xml, ManualClock(), tmp_path / "cache", None)
    await asyncio.gather(plant_base_image(z.t1), plant_base_image(z.t2))
    yield z
    await z.provider.close()


async def test_a_down_host_gives_its_share_to_the_others_and_is_tried_again_later(
    zone: Zone,
) -> None:
    clock = zone.provider._clock
    assert isinstance(clock, ManualClock)
    errors = connects("t3", "error")
    made = [await zone.provider.create(spec(f"pfo{i}")) for i in range(6)]

    assert all(p.host.count(".") == 3 for p in made)  # the test driver's made-up address
    hosts = [p.resource_id.split("/")[0] for p in made]
    assert sorted(hosts) == ["t1", "t1", "t1", "t2", "t2", "t2"]  # the fewest proxies first
    assert await domains_on(zone.t1) == sorted(
        domain_name(f"pfo{i}") for i, h in enumerate(hosts) if h == "t1"
    )
    assert await domains_on(zone.t2) == sorted(
        domain_name(f"pfo{i}") for i, h in enumerate(hosts) if h == "t2"
    )
    # t3 was tried by the first create only, then left out while its mark held ...
    assert connects("t3", "error") == errors + 1
    # ... and is tried again once it has passed.
    clock.advance(zone.settings.host_retry_after)
    await zone.provider.create(spec("pfo6"))
    assert connects("t3", "error") == errors + 2


async def test_creates_placed_at_once_spread_over_the_hosts(
    zone: Zone, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_base, arrived, all_placed = Pool.ensure_base, [0], asyncio.Event()

    async def wait_for_all(self: Pool, *args: Any) -> str:
        """No create gets past its host's choice before all four have chosen."""
        arrived[0] += 1
        if arrived[0] == 4:
            all_placed.set()
        await all_placed.wait()
        return await ensure_base(self, *args)

    monkeypatch.setattr(Pool, "ensure_base", wait_for_all)
    made = await asyncio.gather(*(zone.provider.create(spec(f"pfc{i}")) for i in range(4)))
    # Each counts the ones placed before it, which no listing shows yet.
    assert sorted(p.resource_id.split("/")[0] for p in made) == ["t1", "t1", "t2", "t2"]


async def test_a_redelivered_create_finds_its_domain_on_whichever_host_it_is(
    zone: Zone,
) -> None:
    first = await zone.provider.create(spec("pfr1"))
    other = zone.t2 if first.resource_id.startswith("t1/") else zone.t1
    # The other host now runs fewer proxies: by room alone the create would go there.
    again = await zone.provider.create(spec("pfr1"))
    assert again == first
    assert await domains_on(other) == []
    # A domain some earlier attempt (another process) left on the fuller host is adopted.
    await zone.provider.create(spec("pfr2"))  # one each
    fuller = zone.t1
    xml = render_domain_xml(
        DomainSpec(
            name=domain_name("pfr3"),
            proxy_id="pfr3",
            installation_id="inst-fo",
            created_at=1000.0,
            vcpus=1,
            memory_mib=256,
            disk_path="/default-pool/pfr3.qcow2",
            disk_format="qcow2",
            seed_path="/default-pool/pfr3.iso",
            network="default",
            firmware="bios",
            domain_type="qemu",
        )
    )
    await Domains(fuller).define_and_start(domain_name("pfr3"), xml)
    adopted = await zone.provider.create(spec("pfr3"))
    assert adopted.resource_id == "t1/pf-pfr3"
    assert domain_name("pfr3") not in await domains_on(zone.t2)


async def test_a_proxy_whose_host_went_down_mid_create_waits_for_it_instead_of_doubling(
    zone: Zone,
) -> None:
    async def no_address(self: Domains, name: str, network: str) -> str | None:
        return None  # the guest is still booting

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Domains, "address", no_address)
        with pytest.raises(TemporaryProviderError, match="no address"):
            await zone.provider.create(spec("pfw1"))
    built_on = zone.t1 if await domains_on(zone.t1) else zone.t2
    other = zone.t2 if built_on is zone.t1 else zone.t1
    name = built_on.host.name

    async def unreachable(*_args: Any, **_kw: Any) -> Any:
        raise TemporaryProviderError(f"host {name} (zone {ZONE}) unreachable: cut by the test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(built_on, "run", unreachable)  # its host goes down before a redelivery
        with pytest.raises(TemporaryProviderError, match=f"host {name} .*may hold this proxy's"):
            await zone.provider.create(spec("pfw1"))
        assert await domains_on(other) == []  # no second domain
        made = await zone.provider.create(spec("pfw2"))  # the zone's other proxies go on
        assert made.resource_id == f"{other.host.name}/pf-pfw2"

    # The host is back. Its mark still holds, but nothing else fits this proxy: the create
    # tries it again at once and adopts the first domain.
    adopted = await zone.provider.create(spec("pfw1"))
    assert adopted.resource_id == f"{name}/pf-pfw1"
    assert await domains_on(built_on) == [domain_name("pfw1")]
    assert domain_name("pfw1") not in await domains_on(other)


async def test_every_host_of_the_zone_down_is_a_temporary_error_naming_them(
    node_xml: Path, tmp_path: Path
) -> None:
    settings = KvmSettings(
        hosts=[host("t3"), host("t4")], images=IMAGES, default_image="img", address_timeout=0.3
    )
    provider = KvmProvider(settings, "inst-fo", connector_for=lambda _h: DirectConnector(DOWN_URI))
    try:
        with pytest.raises(TemporaryProviderError) as caught:
            await provider.create(spec("pfd1"))
        message = str(caught.value)
        assert message.startswith(f"every host of zone {ZONE} is down (t3, t4): ")
        assert "host t3 (zone test-a) unreachable" in message
        assert "host t4 (zone test-a) unreachable" in message
    finally:
        await provider.close()


async def test_a_zone_whose_hosts_all_were_down_works_again_as_soon_as_one_is_back(
    zone: Zone,
) -> None:
    async def unreachable(*_args: Any, **_kw: Any) -> Any:
        raise TemporaryProviderError("unreachable: cut by the test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zone.t1, "run", unreachable)
        patch.setattr(zone.t2, "run", unreachable)
        with pytest.raises(TemporaryProviderError, match=r"every host of zone test-a is down"):
            await zone.provider.create(spec("pfb1"))
    # Every mark still holds (the clock has not moved); with no other host to go to, the
    # create tries the marked ones rather than wait the marks out.
    made = await zone.provider.create(spec("pfb1"))
    assert made.resource_id == "t1/pf-pfb1"


async def test_the_most_room_goes_first_and_a_full_zone_waits(
    node_xml: Path, tmp_path: Path
) -> None:
    z = Zone(node_xml, ManualClock(), tmp_path / "cache", (1, 2))
    try:
        await asyncio.gather(plant_base_image(z.t1), plant_base_image(z.t2))
        # room (t1, t2): (1, 2) -> t2; (1, 1), t1 runs fewer -> t1; (0, 1) -> t2
        made = [await z.provider.create(spec(f"pfl{i}")) for i in range(3)]
        assert [p.resource_id.split("/")[0] for p in made] == ["t2", "t1", "t2"]
        with pytest.raises(TemporaryProviderError) as caught:
            await z.provider.create(spec("pfl3"))
        assert str(caught.value) == (
            f"every host of zone {ZONE} that answers is full (t1 1/1, t2 2/2); down: t3"
        )
        assert len(await domains_on(z.t1)) + len(await domains_on(z.t2)) == 3
    finally:
        await z.provider.close()


async def test_a_zone_no_host_serves_is_a_permanent_error(zone: Zone) -> None:
    wrong = spec("pfz1")
    wrong.zone = "elsewhere"
    with pytest.raises(PermanentProviderError, match="no KVM host serves zone 'elsewhere'"):
        await zone.provider.create(wrong)
