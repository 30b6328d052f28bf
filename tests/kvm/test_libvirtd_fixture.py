"""The session's libvirtd is complete: a TCG domain with a qcow2 disk in the pool and a NIC on
the network starts through the SSH tunnel (virtlogd, the QEMU user, file permissions, the
bridge and its tap device all work), then goes away without a trace."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import libvirt
from tests.kvm.conftest import LibvirtDaemon

from proxyfleet.provisioner_kvm.pure.config import KvmHost
from proxyfleet.provisioner_kvm.tunnel import SshTunnel


def _domain_xml(name: str, disk: str, network: str) -> str:
    return f"""<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file='{disk}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <interface type='network'>
      <source network='{network}'/>
      <model type='virtio'/>
    </interface>
  </devices>
</domain>"""


def _define_start_remove(uri: str, xml: str, name: str, pool: str, volume: str) -> None:
    conn = libvirt.open(uri)
    try:
        pool_obj = conn.storagePoolLookupByName(pool)
        pool_obj.refresh()
        assert pool_obj.storageVolLookupByName(volume).info()[1] == 64 * 2**20
        dom = conn.defineXML(xml)
        dom.create()
        assert dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        assert dom.isActive()
        dom.destroy()
        dom.undefine()
        assert name not in [d.name() for d in conn.listAllDomains()]
    finally:
        conn.close()


async def test_a_tcg_domain_starts_through_the_tunnel(
    kvm_host: KvmHost, libvirtd: LibvirtDaemon
) -> None:
    name = f"{libvirtd.name_prefix}smoke"
    disk = libvirtd.pool_path / f"{name}.qcow2"
    qemu_img = ["qemu-img", "create", "-q", "-f", "qcow2", str(disk), "64M"]
    await asyncio.to_thread(subprocess.run, qemu_img, check=True)
    xml = _domain_xml(name, str(disk), libvirtd.network_name)
    tunnel = SshTunnel(kvm_host)
    await tunnel.open()
    try:
        await asyncio.to_thread(
            _define_start_remove, tunnel.libvirt_uri, xml, name, libvirtd.pool_name, disk.name
        )
    finally:
        await tunnel.close()
        disk.unlink(missing_ok=True)


def test_the_network_is_nat_where_libvirt_can_set_up_its_firewall(libvirtd: LibvirtDaemon) -> None:
    """NAT needs iptables for libvirt's rules; without it the fixture falls back to open mode."""
    expected = "nat" if Path("/usr/sbin/iptables").exists() else "open"
    assert libvirtd.network_mode == expected
    assert libvirtd.bridge_address.startswith("192.168.")
