"""Two KVM provisioner replicas (two adapters) sharing one Redis, against libvirt's test
driver: a redelivery to the other replica waits for the host the first began building on
instead of building a second VM elsewhere, and two replicas missing one host's image cache
at once make one upload.

The hosts are those of tests/kvm/test_test_driver_failover.py. A test driver `test:///<node
xml>` is private to its connection, so the second replica of the first test is given the
first's host sessions: the same hosts, while everything else of the adapter (its pins, its
down marks) is its own. `test:///default` is shared by every connection of the process:
the second test's replicas each open their own connection to it."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, BinaryIO

import libvirt
import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY
from tests.kvm.helpers import TEST_DRIVER_URI
from tests.kvm.test_test_driver_failover import (
    DOWN_URI,
    IMAGES,
    NODE_XML,
    ZONE,
    domains_on,
    host,
    plant_base_image,
    spec,
)

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import TemporaryProviderError
from proxyfleet.common.store import Locks, Pins
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import DirectConnector
from proxyfleet.provisioner_kvm.pure.config import KvmImage, KvmSettings
from proxyfleet.provisioner_kvm.pure.names import base_volume_name, domain_name
from proxyfleet.provisioner_kvm.pure.placement import resolve_image
from proxyfleet.provisioner_kvm.shared import SharedPins, SharedUploads
from proxyfleet.provisioner_kvm.volumes import COMPLETE_SUFFIX, Pool

PROVIDER = "onprem"


def replica(
    settings: KvmSettings,
    redis_client: aioredis.Redis,
    uri_of: Callable[[str], str],
    name: str,
) -> KvmProvider:
    """An adapter as the service builds it: pins and upload locks in Redis."""
    return KvmProvider(
        settings,
        "inst-fo",
        connector_for=lambda h: DirectConnector(uri_of(h.name)),
        clock=ManualClock(),
        address_poll_interval=0.05,
        pins=SharedPins(Pins(redis_client, f"kvm:{PROVIDER}")),
        uploads=SharedUploads(Locks(redis_client), PROVIDER, token=name, poll=0.02),
    )


@pytest.fixture
def uploaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The test driver refuses virStorageVolUpload: create the volume, send nothing. Returns
    the volumes "uploaded", in order."""
    names: list[str] = []

    async def upload(self: Pool, volume: str, xml: str, src: BinaryIO, size: int) -> str:
        names.append(volume)

        def create(conn: libvirt.virConnect) -> str:
            return str(conn.storagePoolLookupByName(self.name).createXML(xml, 0).path())

        return await self._s.run("storageVolCreateXML", create, volume=volume)

    monkeypatch.setattr(Pool, "upload", upload)
    return names


# ---- a redelivery after a restart, its host down ------------------------------------------


@pytest.fixture
async def first(
    tmp_path: Path, redis_client: aioredis.Redis, uploaded: list[str]
) -> AsyncIterator[KvmProvider]:
    """Replica one: hosts t1 and t2 up (a test driver each, base image cached), t3 down."""
    node_xml = tmp_path / "node.xml"
    node_xml.write_text(NODE_XML)
    uris = {"t1": f"test://{node_xml}", "t2": f"test://{node_xml}", "t3": DOWN_URI}
    settings = KvmSettings(
        hosts=[host("t1"), host("t2"), host("t3")],
        images=IMAGES,
        default_image="img",
        address_timeout=0.3,
        image_cache_dir=str(tmp_path / "cache"),
    )
    provider = replica(settings, redis_client, uris.__getitem__, "one")
    await asyncio.gather(*(plant_base_image(provider.sessions[h]) for h in ("t1", "t2")))
    yield provider
    await provider.close()


async def test_a_redelivery_to_a_fresh_replica_waits_for_the_pinned_host_that_is_down(
    first: KvmProvider, redis_client: aioredis.Redis
) -> None:
    async def no_address(self: Domains, name: str, network: str) -> str | None:
        return None  # the guest is still booting

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Domains, "address", no_address)
        with pytest.raises(TemporaryProviderError, match="no address"):
            await first.create(spec("pfs1"))
    t1, t2 = first.sessions["t1"], first.sessions["t2"]
    built_on, other = (t1, t2) if await domains_on(t1) else (t2, t1)
    name = built_on.host.name
    assert await redis_client.get(f"pf:pin:kvm:{PROVIDER}:pfs1") == name

    # Replica one is gone (restarted, or killed); the intent goes to a fresh replica, which
    # knows nothing of the first attempt but what Redis holds. The hosts are the same.
    second = replica(first._settings, redis_client, lambda _h: DOWN_URI, "two")
    second.sessions = first.sessions

    async def unreachable(*_args: Any, **_kw: Any) -> Any:
        raise TemporaryProviderError(f"host {name} (zone {ZONE}) unreachable: cut by the test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(built_on, "run", unreachable)  # its host is down at the redelivery
        with pytest.raises(TemporaryProviderError, match=f"host {name} .*may hold this proxy's"):
            await second.create(spec("pfs1"))
        assert await domains_on(other) == []  # no second domain

    # The host is back: the fresh replica adopts the first domain, and drops the pin.
    adopted = await second.create(spec("pfs1"))
    assert adopted.resource_id == f"{name}/pf-pfs1"
    assert await domains_on(built_on) == [domain_name("pfs1")]
    assert await domains_on(other) == []
    assert await redis_client.get(f"pf:pin:kvm:{PROVIDER}:pfs1") is None


async def test_a_delete_drops_the_pin(first: KvmProvider, redis_client: aioredis.Redis) -> None:
    async def no_address(self: Domains, name: str, network: str) -> str | None:
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Domains, "address", no_address)
        with pytest.raises(TemporaryProviderError, match="no address"):
            await first.create(spec("pfs2"))
    assert await redis_client.get(f"pf:pin:kvm:{PROVIDER}:pfs2") is not None
    with pytest.raises(TemporaryProviderError, match="t3"):  # t3 is down: the delete is retried
        await first.delete("pfs2", "")
    assert await redis_client.get(f"pf:pin:kvm:{PROVIDER}:pfs2") is not None
    built_on = "t1" if await domains_on(first.sessions["t1"]) else "t2"
    await first.delete("pfs2", f"{built_on}/pf-pfs2")
    assert await redis_client.get(f"pf:pin:kvm:{PROVIDER}:pfs2") is None


# ---- two replicas missing one host's image cache at once ----------------------------------


def cache_misses(host_name: str) -> float:
    labels = {"host": host_name, "result": "miss"}
    return REGISTRY.get_sample_value("proxyfleet_kvm_image_cache_total", labels) or 0.0


async def test_two_replicas_missing_one_hosts_cache_at_once_make_one_upload(
    tmp_path: Path,
    redis_client: aioredis.Redis,
    uploaded: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image = tmp_path / "img.qcow2"  # a file of its own: a base volume no other test made
    image.write_bytes(b"not a real image")
    images = {"img": KvmImage(url=f"file://{image}", firmware="bios")}
    base = base_volume_name(resolve_image({}, images, "img"))
    settings = KvmSettings(
        hosts=[host("t9")],
        images=images,
        default_image="img",
        address_timeout=0.3,
        image_cache_dir=str(tmp_path / "cache"),
    )
    one, two = (replica(settings, redis_client, lambda _h: TEST_DRIVER_URI, n) for n in "ab")
    misses = cache_misses("t9")
    upload = Pool.upload

    async def after_both_missed(self: Pool, volume: str, *args: Any) -> str:
        """The base upload starts once both replicas have found the cache empty."""
        if volume == base:
            async with asyncio.timeout(5):
                while cache_misses("t9") < misses + 2:  # noqa: ASYNC110 - a metric, no event
                    await asyncio.sleep(0.01)
        return await upload(self, volume, *args)

    monkeypatch.setattr(Pool, "upload", after_both_missed)
    ids = [f"pfu{secrets.token_hex(3)}" for _ in range(2)]
    try:
        made = await asyncio.gather(one.create(spec(ids[0])), two.create(spec(ids[1])))
        assert [p.resource_id for p in made] == [f"t9/{domain_name(i)}" for i in ids]
        assert uploaded.count(base) == 1
        assert uploaded.count(base + COMPLETE_SUFFIX) == 1
        assert cache_misses("t9") == misses + 2
    finally:
        for provider, proxy_id in zip((one, two), ids, strict=True):
            await provider.delete(proxy_id, f"t9/{domain_name(proxy_id)}")
        pool = Pool(one.sessions["t9"])
        for volume in (base, base + COMPLETE_SUFFIX):
            await pool.delete(volume)
        await asyncio.gather(one.close(), two.close())
