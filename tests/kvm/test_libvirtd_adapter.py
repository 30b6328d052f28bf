"""The KVM adapter against a real libvirtd on this machine, reached through a real SSH
connection (in-process asyncssh server) with the libvirt socket forwarded, as in production.

No guest OS boots here (the base image is an empty qcow2): the domains really start under
TCG, but no address ever comes, so each create ends in the temporary "no address yet"
error after everything else is in place. The opt-in test in tests/kvm/integration boots a
real guest."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import libvirt
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY
from tests.kvm.conftest import LibvirtDaemon, SshServer
from tests.provisioner.helpers import fast_settings, wait_until

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.messaging.jetstream import Publisher, connect_nats, ensure_streams
from proxyfleet.common.runner import ProvisionerRunner
from proxyfleet.common.runner.failures import Kind, ResourceMissing, failure_kind, provider_error
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.gc.collector import Collector
from proxyfleet.gc.settings import GcSettings
from proxyfleet.provisioner_kvm.adapter import KvmProvider
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.libvirt_calls import classify, code_name
from proxyfleet.provisioner_kvm.pure.config import KvmHost, KvmImage, KvmSettings
from proxyfleet.provisioner_kvm.pure.domain_xml import disk_paths_from_domain_xml
from proxyfleet.provisioner_kvm.pure.names import (
    base_volume_name,
    domain_name,
    overlay_volume_name,
    seed_volume_name,
)
from proxyfleet.provisioner_kvm.pure.placement import resolve_image
from proxyfleet.provisioner_kvm.pure.seed_iso import read_seed_iso
from proxyfleet.provisioner_kvm.volumes import COMPLETE_SUFFIX, Pool

INSTALLATION = "inst-kvm"


@pytest.fixture(scope="module")
def base_image(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An empty 64 MiB qcow2 (a few hundred KB on disk) and its sha256."""
    path = tmp_path_factory.mktemp("images") / "tiny.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), "64M"], check=True)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def settings_for(host: KvmHost, image: Path, sha256: str, cache: Path) -> KvmSettings:
    return KvmSettings(
        hosts=[host],
        images={"tiny": KvmImage(url=f"file://{image}", sha256=sha256)},
        default_image="tiny",
        memory_mib=256,
        disk_gib=1,
        image_cache_dir=str(cache),
        address_timeout=1.0,
    )


def spec(proxy_id: str, zone: str, **placement: str) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id,
        installation_id=INSTALLATION,
        zone=zone,
        username="u1",
        password="pw-secret-1",
        placement=placement,
    )


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def provider(
    kvm_host: KvmHost, base_image: tuple[Path, str], tmp_path: Path
) -> AsyncIterator[KvmProvider]:
    p = KvmProvider(
        settings_for(kvm_host, *base_image, tmp_path),
        INSTALLATION,
        address_poll_interval=0.2,
        trace_full=True,
    )
    yield p
    await p.close()


async def test_create_uploads_builds_and_starts_then_delete_leaves_nothing(
    provider: KvmProvider, kvm_host: KvmHost, base_image: tuple[Path, str], libvirtd: LibvirtDaemon
) -> None:
    session = provider.sessions[kvm_host.name]
    pool, domains = Pool(session), Domains(session)
    image = resolve_image(
        {}, {"tiny": KvmImage(url=f"file://{base_image[0]}", sha256=base_image[1])}, "tiny"
    )
    base = base_volume_name(image)
    await pool.delete(base + COMPLETE_SUFFIX)  # another test may have cached it
    await pool.delete(base)
    misses = counter("proxyfleet_kvm_image_cache_total", host=kvm_host.name, result="miss")

    with pytest.raises(TemporaryProviderError, match="no address"):
        await provider.create(spec("pkvm1", kvm_host.zone))

    # The base image went into the pool byte for byte, through libvirt's upload stream.
    assert await pool.download(base) == base_image[0].read_bytes()
    assert counter("proxyfleet_kvm_image_cache_total", host=kvm_host.name, result="miss") == (
        misses + 1
    )
    # The overlay is backed by it; the seed ISO carries this proxy's cloud-init.
    overlay = overlay_volume_name("pkvm1")
    overlay_xml = await session.run(
        "storageVolGetXMLDesc",
        lambda c: c.storagePoolLookupByName(pool.name).storageVolLookupByName(overlay).XMLDesc(0),
    )
    assert f"<path>{await pool.path_of(base)}</path>" in overlay_xml
    seed = read_seed_iso(await pool.download(seed_volume_name("pkvm1")))
    assert "http_port 0.0.0.0:3128" in seed["user-data"]
    assert "pw-secret-1" not in seed["user-data"]  # only the bcrypt hash
    assert "pkvm1" in seed["meta-data"]
    # The domain runs under TCG with file disks on those paths and UEFI firmware.
    state = await domains.state(domain_name("pkvm1"))
    assert state is not None
    assert state.active
    assert state.identity is not None
    assert state.identity.installation_id == INSTALLATION
    xml = await session.run(
        "domainGetXMLDesc", lambda c: c.lookupByName(domain_name("pkvm1")).XMLDesc(0)
    )
    assert set(disk_paths_from_domain_xml(xml)) == {
        await pool.path_of(overlay),
        await pool.path_of(seed_volume_name("pkvm1")),
    }
    assert "<nvram" in xml
    assert "type='qemu'" in xml or 'type="qemu"' in xml

    # A second proxy reuses the cached base image.
    hits = counter("proxyfleet_kvm_image_cache_total", host=kvm_host.name, result="hit")
    with pytest.raises(TemporaryProviderError):
        await provider.create(spec("pkvm2", kvm_host.zone))
    assert counter("proxyfleet_kvm_image_cache_total", host=kvm_host.name, result="hit") == (
        hits + 1
    )

    listed = {r.proxy_id: r for r in await provider.list_managed()}
    assert listed["pkvm1"].resource_id == f"{kvm_host.name}/{domain_name('pkvm1')}"
    assert listed["pkvm1"].zone == kvm_host.zone
    assert listed["pkvm1"].created_at > 0

    for pid in ("pkvm1", "pkvm2"):
        await provider.delete(pid, f"{kvm_host.name}/{domain_name(pid)}")
        assert await domains.state(domain_name(pid)) is None
        assert await pool.path_of(overlay_volume_name(pid)) is None
        assert await pool.path_of(seed_volume_name(pid)) is None
    left = await session.run(
        "storagePoolListAllVolumes",
        lambda c: sorted(v.name() for v in c.storagePoolLookupByName(pool.name).listAllVolumes()),
    )
    assert left == sorted([base, base + COMPLETE_SUFFIX])  # only the shared cache
    nvram = Path("/var/lib/libvirt/qemu/nvram") / f"{domain_name('pkvm1')}_VARS.fd"
    assert not nvram.exists()


async def test_concurrent_creates_upload_the_base_image_once(
    provider: KvmProvider, kvm_host: KvmHost, base_image: tuple[Path, str]
) -> None:
    session = provider.sessions[kvm_host.name]
    pool = Pool(session)
    image = resolve_image(
        {}, {"tiny": KvmImage(url=f"file://{base_image[0]}", sha256=base_image[1])}, "tiny"
    )
    base = base_volume_name(image)
    await pool.delete(base + COMPLETE_SUFFIX)
    await pool.delete(base)
    labels = {"host": kvm_host.name}
    misses = counter("proxyfleet_kvm_image_cache_total", **labels, result="miss")
    hits = counter("proxyfleet_kvm_image_cache_total", **labels, result="hit")
    results = await asyncio.gather(
        provider.create(spec("pkvmc1", kvm_host.zone)),
        provider.create(spec("pkvmc2", kvm_host.zone)),
        return_exceptions=True,
    )
    try:
        # Both got as far as waiting for an address: no upload was cut by the other.
        assert all(isinstance(r, TemporaryProviderError) for r in results), results
        assert all("no address" in str(r) for r in results), results
        assert counter("proxyfleet_kvm_image_cache_total", **labels, result="miss") == misses + 1
        assert counter("proxyfleet_kvm_image_cache_total", **labels, result="hit") == hits + 1
        assert await pool.download(base) == base_image[0].read_bytes()
    finally:
        for pid in ("pkvmc1", "pkvmc2"):
            await provider.delete(pid, f"{kvm_host.name}/{domain_name(pid)}")


async def test_sha256_mismatch_is_a_clear_permanent_error(
    kvm_host: KvmHost, base_image: tuple[Path, str], tmp_path: Path
) -> None:
    wrong = "0" * 64
    p = KvmProvider(settings_for(kvm_host, base_image[0], wrong, tmp_path), INSTALLATION)
    try:
        with pytest.raises(PermanentProviderError, match=f"sha256 mismatch.*expected {wrong}"):
            await p.create(spec("pkvmsha", kvm_host.zone))
        session = p.sessions[kvm_host.name]
        assert await Domains(session).state(domain_name("pkvmsha")) is None
        assert await Pool(session).path_of(overlay_volume_name("pkvmsha")) is None
    finally:
        await p.close()


async def test_a_host_that_is_down_gives_its_share_of_the_zone_to_the_others(
    kvm_host: KvmHost, base_image: tuple[Path, str], tmp_path: Path, unused_tcp_port: int
) -> None:
    fields = {f: getattr(kvm_host, f) for f in kvm_host.__struct_fields__}
    nobody = f"127.0.0.1:{unused_tcp_port}"  # loopback, nobody listening: SSH refused
    beside = KvmHost(**{**fields, "name": "a-down", "ssh_address": nobody})  # zone kvm-a
    alone = KvmHost(**{**fields, "name": "down", "zone": "kvm-down", "ssh_address": nobody})
    settings = settings_for(kvm_host, *base_image, tmp_path)
    settings = KvmSettings(
        **{
            **{f: getattr(settings, f) for f in settings.__struct_fields__},
            "hosts": [beside, kvm_host, alone],
        }
    )
    p = KvmProvider(settings, INSTALLATION, address_poll_interval=0.2)
    session = p.sessions[kvm_host.name]
    tried = counter("proxyfleet_kvm_ssh_connects_total", host="a-down", result="error")
    try:
        # a-down sorts first, and an idle host has the most room: every create of kvm-a
        # still goes through (as far as a guest without an OS lets it) on h1.
        for pid in ("pkvmfo1", "pkvmfo2"):
            with pytest.raises(TemporaryProviderError, match="no address"):
                await p.create(spec(pid, kvm_host.zone))
            state = await Domains(session).state(domain_name(pid))
            assert state is not None
            assert state.active
        # a-down was tried by the first create only: it is left out while its mark holds.
        assert counter("proxyfleet_kvm_ssh_connects_total", host="a-down", result="error") == (
            tried + 1
        )
        # A redelivered create adopts the domain it made (same UUID), none is made again.
        uuid = await session.run(
            "domainGetUUID", lambda c: c.lookupByName(domain_name("pkvmfo1")).UUIDString()
        )
        with pytest.raises(TemporaryProviderError, match="no address"):
            await p.create(spec("pkvmfo1", kvm_host.zone))
        assert (
            await session.run(
                "domainGetUUID", lambda c: c.lookupByName(domain_name("pkvmfo1")).UUIDString()
            )
            == uuid
        )
        # A zone whose every host is down: a temporary error naming them.
        with pytest.raises(
            TemporaryProviderError, match=r"every host of zone kvm-down is down \(down\)"
        ):
            await p.create(spec("pkvmdown", "kvm-down"))
        # Listing skips the hosts that are down and still lists the others.
        listed = {r.proxy_id for r in await p.list_managed()}
        assert {"pkvmfo1", "pkvmfo2"} <= listed
    finally:
        for pid in ("pkvmfo1", "pkvmfo2"):
            await p.delete(pid, f"{kvm_host.name}/{domain_name(pid)}")
        await p.close()


async def test_restart_adopts_and_gc_removes_the_orphan(
    kvm_host: KvmHost,
    base_image: tuple[Path, str],
    tmp_path: Path,
    nats_url: str,
    redis_client: aioredis.Redis,
) -> None:
    # The installation began before the domain was made (its services ran first), so a
    # domain without a registry entry is an orphan, not the survivor of a store reset.
    await ProxyRegistry(redis_client, SystemClock()).installation.mark(INSTALLATION)
    first = KvmProvider(settings_for(kvm_host, *base_image, tmp_path), INSTALLATION)
    with pytest.raises(TemporaryProviderError, match="no address"):
        await first.create(spec("pkvmgc", kvm_host.zone))
    session = first.sessions[kvm_host.name]
    uuid = await session.run(
        "domainGetUUID", lambda c: c.lookupByName(domain_name("pkvmgc")).UUIDString()
    )
    await first.close()

    # A new provisioner process: it adopts the running domain instead of building another.
    second = KvmProvider(
        settings_for(kvm_host, *base_image, tmp_path), INSTALLATION, address_poll_interval=0.2
    )
    session = second.sessions[kvm_host.name]
    with pytest.raises(TemporaryProviderError, match="no address"):
        await second.create(spec("pkvmgc", kvm_host.zone))
    assert (
        await session.run(
            "domainGetUUID", lambda c: c.lookupByName(domain_name("pkvmgc")).UUIDString()
        )
        == uuid
    )

    # The proxy is not in the registry: one GC round asks for its delete over NATS and the
    # provisioner (the real runner on this adapter) deletes the domain and its volumes.
    name = "kvmgc"
    nc: NatsClient = await connect_nats(nats_url, "kvm-gc-test")
    await ensure_streams(nc.jetstream())
    clock = SystemClock()
    registry = ProxyRegistry(redis_client, clock)
    runner = ProvisionerRunner(
        nc=nc,
        registry=registry,
        provider=second,
        settings=fast_settings(name),
        installation_id=INSTALLATION,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))
    try:
        await wait_until(runner.ready, 5.0, "the runner")
        collector = Collector(
            nc=nc,
            registry=registry,
            publisher=Publisher(nc, clock),
            providers=[name],
            installation_id=INSTALLATION,
            settings=GcSettings(min_age=0.0, request_timeout=5.0),
            clock=clock,
        )
        report = await collector.run_once()
        assert [d.resource.proxy_id for d in report.deletions] == ["pkvmgc"]

        async def gone() -> bool:
            return (
                await Domains(session).state(domain_name("pkvmgc")) is None
                and await Pool(session).path_of(seed_volume_name("pkvmgc")) is None
            )

        # The domain goes first, then its overlay, then its seed.
        await wait_until(gone, 30.0, "the orphan domain and its volumes to be deleted")
        assert await Pool(session).path_of(overlay_volume_name("pkvmgc")) is None
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await nc.close()
        await second.close()


async def test_a_dropped_ssh_connection_is_re_established(
    provider: KvmProvider, kvm_host: KvmHost, ssh_server: SshServer
) -> None:
    pool = Pool(provider.sessions[kvm_host.name])
    assert await pool.path_of("pf-none") is None  # connects
    connects = counter("proxyfleet_kvm_ssh_connects_total", host=kvm_host.name, result="ok")
    assert ssh_server.drop_connections() >= 1
    await asyncio.sleep(0.2)
    # The drop is noticed before the next call (the tunnel is closed) or by it (a
    # temporary error); either way the call after that runs on a new connection.
    with contextlib.suppress(TemporaryProviderError):
        await pool.path_of("pf-none")
    assert await pool.path_of("pf-none") is None
    assert counter("proxyfleet_kvm_ssh_connects_total", host=kvm_host.name, result="ok") == (
        connects + 1
    )


def test_libvirt_error_codes_map_to_the_taxonomy() -> None:
    def err(code: int) -> libvirt.libvirtError:
        e = libvirt.libvirtError("boom")
        e.err = (code, 0, "boom", 0, "", None, None, 0, 0)
        return e

    def raised(code: int) -> Exception:
        return provider_error(classify(err(code), "host h: libvirt c"))

    missing = raised(libvirt.VIR_ERR_NO_DOMAIN)
    assert isinstance(missing, ResourceMissing)
    assert isinstance(missing, PermanentProviderError)
    assert str(missing) == "host h: libvirt c: boom"
    broken = raised(libvirt.VIR_ERR_RPC)
    assert isinstance(broken, TemporaryProviderError)
    assert failure_kind(broken) is Kind.DISCONNECTED
    assert isinstance(raised(libvirt.VIR_ERR_XML_ERROR), PermanentProviderError)
    assert isinstance(raised(libvirt.VIR_ERR_OPERATION_TIMEOUT), TemporaryProviderError)
    assert code_name(libvirt.VIR_ERR_NO_DOMAIN) == "no_domain"
    assert code_name(-12345) == "-12345"
