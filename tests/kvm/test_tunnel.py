"""SshTunnel against the in-process SSH server and the session's real libvirtd."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import asyncssh
import libvirt
import msgspec
import pytest
from tests.kvm.conftest import LibvirtDaemon, SshServer

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.provisioner_kvm.pure.config import KvmHost
from proxyfleet.provisioner_kvm.tunnel import SshTunnel, known_hosts_line, split_address


def _pool_names(uri: str) -> list[str]:
    conn = libvirt.open(uri)
    try:
        return [p.name() for p in conn.listAllStoragePools()]
    finally:
        conn.close()


async def _wait_closed(tunnel: SshTunnel) -> None:
    async with asyncio.timeout(5):
        while tunnel.is_open:  # noqa: ASYNC110 - the tunnel offers no event to wait on
            await asyncio.sleep(0.02)


async def test_open_forwards_the_libvirt_socket(kvm_host: KvmHost, libvirtd: LibvirtDaemon) -> None:
    tunnel = SshTunnel(kvm_host)
    sock = await tunnel.open()
    try:
        was_open = tunnel.is_open
        assert sock == tunnel.local_socket
        assert Path(sock).parent.stat().st_mode & 0o777 == 0o700
        assert len(sock) < 100
        assert tunnel.libvirt_uri == f"qemu+unix:///system?socket={sock}"
        assert libvirtd.pool_name in await asyncio.to_thread(_pool_names, tunnel.libvirt_uri)
        assert await tunnel.open() == sock  # already open: same connection, same socket
    finally:
        await tunnel.close()
    assert was_open
    assert not tunnel.is_open
    assert not Path(sock).parent.exists()


async def test_reopens_after_the_connection_drops(
    kvm_host: KvmHost, libvirtd: LibvirtDaemon, ssh_server: SshServer
) -> None:
    tunnel = SshTunnel(kvm_host)
    try:
        sock = await tunnel.open()
        assert ssh_server.drop_connections() >= 1
        await _wait_closed(tunnel)
        assert await tunnel.open() == sock  # same local path: a cached URI stays valid
        assert libvirtd.pool_name in await asyncio.to_thread(_pool_names, tunnel.libvirt_uri)

        await tunnel.close()
        await tunnel.open()
        assert tunnel.is_open
        assert libvirtd.pool_name in await asyncio.to_thread(_pool_names, tunnel.libvirt_uri)
    finally:
        await tunnel.close()


async def test_a_wrong_pinned_host_key_is_permanent(
    kvm_host: KvmHost, ssh_server: SshServer
) -> None:
    host = msgspec.structs.replace(kvm_host, host_key=ssh_server.wrong_host_key)
    with pytest.raises(PermanentProviderError, match=r"host h1: .*does not match the pinned"):
        await SshTunnel(host).open()


async def test_a_refused_client_key_is_permanent(kvm_host: KvmHost, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(other))
    host = msgspec.structs.replace(kvm_host, ssh_key_file=str(other))
    with pytest.raises(PermanentProviderError, match=r"host h1: .*refused") as err:
        await SshTunnel(host).open()
    assert other.read_text().splitlines()[1] not in str(err.value)


async def test_a_wrong_user_is_permanent(kvm_host: KvmHost) -> None:
    host = msgspec.structs.replace(kvm_host, ssh_user="someone-else")
    with pytest.raises(PermanentProviderError, match="'someone-else' was refused"):
        await SshTunnel(host).open()


async def test_an_unreadable_key_file_is_permanent(kvm_host: KvmHost, tmp_path: Path) -> None:
    host = msgspec.structs.replace(kvm_host, ssh_key_file=str(tmp_path / "missing"))
    with pytest.raises(PermanentProviderError, match=r"ssh_key_file .*missing"):
        await SshTunnel(host).open()
    (tmp_path / "garbage").write_text("not a key\n")
    host = msgspec.structs.replace(kvm_host, ssh_key_file=str(tmp_path / "garbage"))
    with pytest.raises(PermanentProviderError, match="not a usable private key"):
        await SshTunnel(host).open()


async def test_nothing_listening_is_temporary(kvm_host: KvmHost) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    host = msgspec.structs.replace(kvm_host, ssh_address=f"127.0.0.1:{port}")
    with pytest.raises(TemporaryProviderError, match=f"host h1: ssh 127.0.0.1:{port}: "):
        await SshTunnel(host).open()


async def test_a_silent_server_times_out_as_temporary(kvm_host: KvmHost) -> None:
    with socket.socket() as s:  # accepts TCP (backlog) but never speaks SSH
        s.bind(("127.0.0.1", 0))
        s.listen()
        host = msgspec.structs.replace(kvm_host, ssh_address=f"127.0.0.1:{s.getsockname()[1]}")
        with pytest.raises(TemporaryProviderError, match=r"timed out after 0.3 s"):
            await SshTunnel(host, connect_timeout=0.3).open()


def test_addresses_and_known_hosts_patterns() -> None:
    assert split_address("kvm1.example") == ("kvm1.example", 22)
    assert split_address("10.0.0.5:2222") == ("10.0.0.5", 2222)
    assert split_address("[fd00::5]:2222") == ("fd00::5", 2222)
    assert split_address("[fd00::5]") == ("fd00::5", 22)
    assert split_address("fd00::5") == ("fd00::5", 22)
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA"
    assert known_hosts_line("kvm1", 22, key) == f"kvm1 {key}\n"
    assert known_hosts_line("10.0.0.5", 2222, f" {key} ") == f"[10.0.0.5]:2222 {key}\n"
