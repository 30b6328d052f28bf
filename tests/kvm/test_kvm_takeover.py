"""Two provisioner-kvm processes on the session's libvirtd (over SSH, through the in-process
server), with the runner's default ack-wait: one is SIGKILLed while its creates wait for
their guests' addresses, and the other finishes them within seconds by adopting the domains
they made (no second domain). Meanwhile its own creates wait for their guests longer than
the ack-wait, heartbeated, and are never handed out again.

No guest boots (the image is an empty qcow2): the test plays the guests' DHCP, writing a
lease for a domain's MAC into the network's lease file when it wants that create done."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.kvm.conftest import LibvirtDaemon
from tests.kvm.contract_helpers import domain_uuids, remove_domains
from tests.kvm.helpers import (
    domain_active,
    domain_mac,
    grant_dhcp_leases,
    kvm_provider,
    lease_file,
    make_image,
)
from tests.provisioner.helpers import wait_until
from tests.takeover import (
    HANDLED,
    ProvisionerProcesses,
    all_in_phase,
    hand_over,
    kill_while_handling,
    registry_on,
)

from proxyfleet.common.wire.models import Phase
from proxyfleet.provisioner_kvm.pure.config import KvmHost
from proxyfleet.provisioner_kvm.pure.names import domain_name
from proxyfleet.provisioner_kvm.settings import KvmProvisionerSettings

SCRIPT = str(Path(sys.executable).parent / "proxyfleet-provisioner-kvm")
PROVIDER = "kvmtakeover"
SLOTS = 3
"""Creates the killed replica holds, and as many again the other one holds of its own."""
TAKEOVER_WITHIN = 20.0
"""Seconds from the SIGKILL to the last of its creates finished: a few ack-waits."""
ACK_WAIT = KvmProvisionerSettings(provider=PROVIDER).ack_wait


def write_config(path: Path, host: KvmHost, image: Path) -> Path:
    entry = kvm_provider(
        PROVIDER,
        host,
        images={"tiny": {"url": f"file://{image}", "firmware": "bios"}},
        default_image="tiny",
        memory_mib=256,
        disk_gib=1,
        address_timeout=120,  # past the test: a create ends when the test grants its lease
        image_cache_dir=str(path.parent / "cache"),
    )
    path.write_text(yaml.safe_dump({"providers": [entry]}))
    return path


@pytest.fixture
def dhcp(libvirtd: LibvirtDaemon) -> Iterator[None]:
    """The network's lease file is put back as it was after the test."""
    path = lease_file(libvirtd.bridge)
    before = path.read_text() if path.exists() else None
    yield
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(before)


def adopted_by(log: str) -> list[str]:
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line["proxy_id"] for line in lines if line.get("event") == "kvm.domain_adopted"]


async def test_a_killed_replicas_creates_are_finished_by_the_other_within_seconds(
    tmp_path: Path,
    kvm_host: KvmHost,
    libvirtd: LibvirtDaemon,
    dhcp: None,
    nats_url: str,
    redis_url: str,
) -> None:
    config = write_config(tmp_path / "providers.yaml", kvm_host, make_image(tmp_path / "t.qcow2"))
    subnet = libvirtd.bridge_address.rsplit(".", 1)[0]
    made: list[str] = []

    async def running(ids: list[str]) -> bool:
        """Every domain started: its create waits for the guest's address."""
        made.extend(p for p in ids if p not in made)
        names = [domain_name(p) for p in ids]
        return all(
            await asyncio.gather(
                *(asyncio.to_thread(domain_active, libvirtd.uri, n) for n in names)
            )
        )

    async def grant(ids: list[str]) -> None:
        macs = [await asyncio.to_thread(domain_mac, libvirtd.uri, domain_name(p)) for p in ids]
        leases = {mac: f"{subnet}.{20 + made.index(p)}" for mac, p in zip(macs, ids, strict=True)}
        await asyncio.to_thread(grant_dhcp_leases, libvirtd.bridge, leases)

    try:
        async with registry_on(redis_url, 4) as (registry, url):
            argv = [SCRIPT, "--provider", PROVIDER, "--providers-config", str(config)]
            argv += ["--nats-url", nats_url, "--redis-url", url]
            argv += ["--installation-id", "kvm-takeover", "--log-format", "json"]
            with ProvisionerProcesses(argv, tmp_path) as replicas:
                # The victim alone first: it uploads the base image before anyone else
                # would race it (a known gap of two replicas missing one host's cache).
                victim = await asyncio.to_thread(replicas.start, "--concurrency", str(SLOTS))
                theirs, _ = await hand_over(
                    victim, registry, PROVIDER, kvm_host.zone, SLOTS, running
                )
                uuids = {p: await domain_uuids(libvirtd.uri, p) for p in theirs}
                # Slots to spare: the victim's intents need not wait for the survivor's own.
                survivor = await asyncio.to_thread(replicas.start, "--concurrency", str(2 * SLOTS))
                own, own_made = await hand_over(
                    survivor, registry, PROVIDER, kvm_host.zone, SLOTS, running
                )
                killed_at = await asyncio.to_thread(
                    kill_while_handling, victim.metrics_url, victim.proc
                )
                await grant(theirs)  # the guests the victim started come up now
                await wait_until(
                    lambda: all_in_phase(registry, theirs, Phase.BOOTING),
                    TAKEOVER_WITHIN,
                    "the killed replica's creates to be finished by the other",
                )
                took = time.monotonic() - killed_at
                print(
                    f"\ntakeover: the killed replica's {SLOTS} creates done {took:.1f} s after it"
                )

                # The survivor's own guests come up an ack-wait and more after their creates
                # began: only the heartbeats kept those intents from being handed out again.
                await asyncio.sleep(max(0.0, own_made + ACK_WAIT + 1 - time.monotonic()))
                assert not await all_in_phase(registry, own, Phase.BOOTING)
                await grant(own)
                await wait_until(
                    lambda: all_in_phase(registry, own, Phase.BOOTING), 30, "its own creates"
                )
                handled = await asyncio.to_thread(survivor.metric, HANDLED, kind="intent.create")
                log = survivor.log_text()
        assert handled == 2 * SLOTS  # every intent once on the survivor: its own never came back
        assert sorted(adopted_by(log)) == sorted(theirs)  # taken over, not made again
        assert {p: await domain_uuids(libvirtd.uri, p) for p in theirs} == uuids  # same domains
        for p in own:
            assert len(await domain_uuids(libvirtd.uri, p)) == 1
    finally:
        await remove_domains(libvirtd.uri, made)
