"""A real VM as a proxy, through the whole system: the API asks for a `kvm` proxy, the
KVM provisioner (a process, over SSH to the session's libvirtd) uploads the image, builds
the seed and boots the guest, the guest agent reports its address, health probes it with a
real CONNECT + TLS through Squid in the guest, a client leases it and fetches a page
through it, and the delete removes the domain and its volumes.

Image: PROXYFLEET_KVM_IMAGE (a local qcow2 with cloud-init, Squid and the guest agent;
`deploy/kvm/build-image.sh` builds one from Debian's packages) or PROXYFLEET_KVM_IMAGE_URL;
PROXYFLEET_KVM_FIRMWARE (uefi|bios, default uefi); PROXYFLEET_KVM_BOOT_TIMEOUT (s, default
1200). Timings are printed (run with -s) and kept in the test's log folder.

Everything that talks to the guest runs in the network namespace of the session's libvirtd
(tests/kvm/netns.py): the whole stack (its own NATS and Redis, the HTTPS target on the
bridge address, every service, so health probes the guest from in there) and this test's
HTTP clients. Only the in-process SSH server stays outside, reached through a loopback
port forwarded into the namespace; nothing here sends traffic to the guests' subnet."""

from __future__ import annotations

import asyncio
import os
import ssl
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import libvirt
import pytest
import yaml
from tests.kvm.conftest import LibvirtDaemon, SshServer
from tests.kvm.helpers import kvm_provider
from tests.kvm.netns import forward_into, run_in

from proxyfleet.devstack.commands import service_bin
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack
from proxyfleet.provisioner_kvm.pure.config import KvmHost
from proxyfleet.provisioner_kvm.pure.names import domain_name

DEFAULT_IMAGE = "/var/tmp/pf-image/debian-12-proxy.qcow2"
BOOT_TIMEOUT = float(os.environ.get("PROXYFLEET_KVM_BOOT_TIMEOUT", "1200"))


def image_url() -> str:
    if url := os.environ.get("PROXYFLEET_KVM_IMAGE_URL"):
        return url
    path = Path(os.environ.get("PROXYFLEET_KVM_IMAGE", DEFAULT_IMAGE))
    if not path.is_file():
        pytest.fail(
            f"no guest image at {path}: build one with `sudo deploy/kvm/build-image.sh {path}` "
            "or set PROXYFLEET_KVM_IMAGE / PROXYFLEET_KVM_IMAGE_URL"
        )
    return f"file://{path.resolve()}"


def kvm_provider_yaml(host: KvmHost, target_port: int, cache: Path) -> str:
    firmware = os.environ.get("PROXYFLEET_KVM_FIRMWARE", "uefi")
    entry = kvm_provider(
        "onprem",
        host,
        images={"proxy": {"url": image_url(), "firmware": firmware}},
        default_image="proxy",
        memory_mib=1024,
        connect_ports=[443, target_port],
        # The test target listens on the libvirt bridge, a private address.
        deny_private_destinations=False,
        address_timeout=BOOT_TIMEOUT,
        image_cache_dir=str(cache),
    )
    entry["boot_timeout"] = BOOT_TIMEOUT
    return textwrap.indent(yaml.safe_dump([entry], sort_keys=False), "  ")


@pytest.fixture
async def stack(
    tmp_path: Path, kvm_host: KvmHost, libvirtd: LibvirtDaemon, ssh_server: SshServer
) -> AsyncIterator[Stack]:
    assert libvirtd.bridge_address, "the network needs a bridge address the guest can reach"
    if not libvirtd.netns:
        pytest.fail(
            "the real-VM test reaches its guest only inside the namespace of the fixture's own "
            "libvirtd: unset TEST_LIBVIRT_SOCKET"
        )
    target_port = free_port()
    opts = StackOptions.on_free_ports(
        base_dir=tmp_path / "stack",
        nats_url="",  # NATS and Redis of the stack's own, started in the namespace
        redis_url="",
        health_interval=5.0,
        boot_timeout=30.0,
        target_host=libvirtd.bridge_address,
        target_port=target_port,
        extra_providers=kvm_provider_yaml(kvm_host, target_port, tmp_path / "cache"),
        extra_services={
            "provisioner-kvm": [
                service_bin("proxyfleet-provisioner-kvm"),
                "--provider",
                "onprem",
                "--metrics-port",
                str(free_port()),
            ]
        },
        installation_id="it-kvm",
        echo=None,
    )
    s = Stack(opts)
    ssh_port = int(ssh_server.address.rsplit(":", 1)[1])
    # The provisioner reaches libvirtd through the SSH server on this test's event loop: the
    # stack starts (and stops) in a thread in the namespace, so the loop keeps serving it.
    async with forward_into(libvirtd.netns_path, ssh_port):
        await run_in(libvirtd.netns_path, s.start)
        try:
            yield s
        finally:
            await run_in(libvirtd.netns_path, s.stop)


async def wait_phase(
    api: httpx.AsyncClient, proxy_id: str, phases: set[str], within: float
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        proxy = (await api.get(f"/v1/proxies/{proxy_id}")).json()
        if proxy["phase"] in phases:
            return proxy  # type: ignore[no-any-return]
        if proxy["phase"] == "failed" or time.monotonic() > deadline:
            raise AssertionError(f"proxy {proxy_id}: {proxy['phase']} ({proxy['reason']})")
        await asyncio.sleep(2)


def domain_exists(uri: str, name: str) -> bool:
    conn = libvirt.open(uri)
    try:
        conn.lookupByName(name)
    except libvirt.libvirtError:
        return False
    finally:
        conn.close()
    return True


async def test_a_real_vm_boots_is_probed_leased_and_deleted(
    stack: Stack, libvirtd: LibvirtDaemon
) -> None:
    # The clients run on an event loop of their own in a thread inside the namespace.
    timings = await run_in(libvirtd.netns_path, lambda: asyncio.run(journey(stack, libvirtd)))
    report = "\n".join(f"{k}: {v:.1f} s" for k, v in timings.items())
    print("\nreal VM timings:\n" + report)
    (stack.opts.base_dir / "timings.txt").write_text(report + "\n")


async def journey(stack: Stack, libvirtd: LibvirtDaemon) -> dict[str, float]:
    """Create, wait for ready, lease and fetch through the guest, delete; returns timings."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    admin = {"Authorization": f"Bearer {stack.admin_token}"}
    client = {"Authorization": f"Bearer {stack.client_token}"}
    async with httpx.AsyncClient(base_url=stack.api_url, headers=admin, timeout=10) as api:
        r = await api.post("/v1/proxies", json={"provider": "onprem"})
        assert r.status_code == 202, r.text
        proxy_id = r.json()["items"][0]["id"]
        booting = await wait_phase(api, proxy_id, {"booting", "ready"}, BOOT_TIMEOUT)
        timings["create -> address (booting)"] = time.monotonic() - started
        assert booting["host"]
        assert booting["port"] == 3128
        ready = await wait_phase(api, proxy_id, {"ready"}, BOOT_TIMEOUT)
        timings["create -> ready (first good probe)"] = time.monotonic() - started
        assert ready["last_probe_error"] == ""

        r = await api.post("/v1/leases", json={"provider": "onprem"}, headers=client)
        assert r.status_code in (200, 201), r.text
        lease = r.json()
        url = lease["proxy"]["url"]
        trust = ssl.create_default_context(cafile=stack.ca_file)
        async with httpx.AsyncClient(proxy=url, verify=trust, timeout=30) as web:
            page = await web.get(stack.target_url)
        assert page.status_code == 200
        r = await api.post(
            f"/v1/leases/{lease['lease_id']}/release",
            json={"epoch": lease["epoch"]},
            headers=client,
        )
        assert r.status_code == 200, r.text

        deleting = time.monotonic()
        r = await api.delete(f"/v1/proxies/{proxy_id}")
        assert r.status_code in (200, 202), r.text
        name = domain_name(proxy_id)
        while await asyncio.to_thread(domain_exists, libvirtd.uri, name):
            assert time.monotonic() - deleting < 120, "the domain was not deleted"
            await asyncio.sleep(1)
        timings["delete -> domain gone"] = time.monotonic() - deleting
    return timings
