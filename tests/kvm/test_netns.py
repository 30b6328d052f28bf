"""The session's libvirtd, its network and its guests live in a network namespace of their
own: this machine's namespace has no bridge and no route to the guests' subnet, and the
only way across is a loopback port forwarded on purpose (tests/kvm/netns.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess

import pytest
from tests.kvm.conftest import LibvirtDaemon
from tests.kvm.netns import call_in, forward_into, run_in


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def _subnet(address: str) -> str:
    return address.rsplit(".", 1)[0] + "."


@pytest.fixture
def libvirtd(libvirtd: LibvirtDaemon) -> LibvirtDaemon:
    if not libvirtd.netns:
        pytest.skip("TEST_LIBVIRT_SOCKET: that daemon runs wherever it was started")
    return libvirtd


def test_the_bridge_and_its_route_exist_only_in_the_namespace(libvirtd: LibvirtDaemon) -> None:
    subnet = _subnet(libvirtd.bridge_address)
    here = _ip("-o", "addr") + _ip("route")
    assert libvirtd.bridge not in here
    assert subnet not in here
    inside = _ip("-n", libvirtd.netns, "-o", "addr", "show", "dev", libvirtd.bridge)
    assert f"inet {libvirtd.bridge_address}/24" in inside
    assert subnet in _ip("-n", libvirtd.netns, "route")


def test_libvirtd_runs_in_the_namespace(libvirtd: LibvirtDaemon) -> None:
    pid = int((libvirtd.pool_path.parent / "libvirtd.pid").read_text())
    with open(f"/proc/{pid}/ns/net", "rb") as theirs, open(libvirtd.netns_path, "rb") as ns:
        assert _inode(theirs.fileno()) == _inode(ns.fileno())
    with open(f"/proc/{pid}/ns/net", "rb") as theirs, open("/proc/self/ns/net", "rb") as ours:
        assert _inode(theirs.fileno()) != _inode(ours.fileno())


def _inode(fd: int) -> int:
    return os.fstat(fd).st_ino


def _echo_once(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"ping")
        return s.recv(16)


async def test_a_loopback_port_is_reachable_in_the_namespace_only_when_forwarded(
    libvirtd: LibvirtDaemon,
) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.read(16))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    async with server:
        with pytest.raises(ConnectionRefusedError):  # the namespace has a loopback of its own
            await run_in(libvirtd.netns_path, lambda: _echo_once(port))
        async with forward_into(libvirtd.netns_path, port):
            assert await run_in(libvirtd.netns_path, lambda: _echo_once(port)) == b"ping"


def _net_ns_of_a_child() -> str:
    argv = ["readlink", "/proc/self/ns/net"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_a_process_started_from_the_namespace_thread_is_in_the_namespace(
    libvirtd: LibvirtDaemon,
) -> None:
    assert call_in(libvirtd.netns_path, _net_ns_of_a_child) != _net_ns_of_a_child()
