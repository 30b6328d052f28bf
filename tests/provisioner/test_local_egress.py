"""Each local proxy leaves through its own loopback address: what the dev target sees through
a real CONNECT (Squid honours the address; proxy.py cannot, see docs/egress.md)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import signal
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import TargetServer

from proxyfleet.common.core.errors import PermanentProviderError
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_local import commands
from proxyfleet.provisioner_local.adapter import LocalProvider
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.processes import find_session_leader
from proxyfleet.provisioner_local.pure.egress_addresses import address_for_port

from .helpers import INSTALLATION, wait_until

MakeProvider = Callable[..., LocalProvider]
PORTS = (20000, 29999)


def spec(placement: dict[str, str] | None = None) -> ProxySpec:
    return ProxySpec(
        proxy_id=f"p{secrets.token_hex(6)}",
        installation_id=INSTALLATION,
        zone="local",
        username="alice",
        password=secrets.token_urlsafe(18),
        placement=placement or {},
    )


def seen_address(proxy_port: int, credentials: str, target: TargetServer) -> str:
    """The address the target reports for a GET made through the proxy (CONNECT, TLS)."""
    authority = f"127.0.0.1:{target.port}"
    token = base64.b64encode(credentials.encode()).decode()
    head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    head += f"Proxy-Authorization: Basic {token}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", proxy_port), timeout=5) as raw:
        raw.sendall(head.encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = raw.recv(4096)
            assert chunk, f"the proxy closed after {reply!r}"
            reply += chunk
        assert reply.split(b" ", 2)[1] == b"200", reply
        context = ssl.create_default_context(cafile=target.ca_file)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(f"GET /whoami HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
            answer = b""
            while chunk := tls.recv(4096):
                answer += chunk
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200"), status
    return str(json.loads(body)["ip"])


async def through(provider: LocalProvider, wanted: ProxySpec, target: TargetServer) -> str:
    done = await provider.create(wanted)
    creds = f"{wanted.username}:{wanted.password}"
    return await asyncio.to_thread(seen_address, done.port, creds, target)


async def test_two_squid_proxies_are_seen_at_their_own_addresses(
    make_local_provider: MakeProvider, target: TargetServer
) -> None:
    provider = make_local_provider("squid", connect_ports=(443, target.port))
    first, second = spec(), spec()
    seen = [await through(provider, s, target) for s in (first, second)]
    assert seen[0] != seen[1]
    listed = {r.proxy_id: r.port for r in await provider.list_managed()}
    expected = [
        address_for_port("127.77.0.0/16", PORTS, listed[s.proxy_id]) for s in (first, second)
    ]
    assert seen == expected
    assert all(a.startswith("127.77.") for a in seen)


async def test_a_squid_restarted_after_a_crash_keeps_its_address(
    make_local_provider: MakeProvider, target: TargetServer, proxy_state_dir: Path
) -> None:
    provider = make_local_provider("squid", connect_ports=(443, target.port))
    wanted = spec()
    before = await through(provider, wanted, target)
    folder = ProxyFolder(proxy_state_dir / INSTALLATION / wanted.proxy_id, wanted.proxy_id)
    [pid] = find_session_leader(commands.engine_signatures(folder))
    os.killpg(pid, signal.SIGKILL)

    async def is_dead() -> bool:
        return await provider.dead() == [wanted.proxy_id]

    await wait_until(is_dead, 5.0, "the killed Squid to be seen dead")
    assert await provider.revive(wanted.proxy_id) not in (0, pid)
    assert await through(provider, wanted, target) == before


async def test_proxies_given_one_egress_address_are_seen_as_one(
    make_local_provider: MakeProvider, target: TargetServer
) -> None:
    provider = make_local_provider("squid", connect_ports=(443, target.port))
    shared = {"egress_address": "127.77.250.9"}
    seen = [await through(provider, spec(shared), target) for _ in range(2)]
    assert seen == ["127.77.250.9", "127.77.250.9"]
    assert await through(provider, spec(), target) != "127.77.250.9"


async def test_an_empty_range_leaves_every_proxy_at_127_0_0_1(
    make_local_provider: MakeProvider, target: TargetServer
) -> None:
    provider = make_local_provider("squid", connect_ports=(443, target.port), egress_range="")
    seen = [await through(provider, spec(), target) for _ in range(2)]
    assert seen == ["127.0.0.1", "127.0.0.1"]


async def test_proxypy_proxies_share_127_0_0_1_whatever_their_placement(
    make_local_provider: MakeProvider, target: TargetServer
) -> None:
    """The documented limitation: proxy.py has no outgoing-address option, so every proxy.py
    proxy is seen at the kernel's choice, which health then reports as one shared address."""
    provider = make_local_provider("proxy.py")
    placements = [{}, {}, {"egress_address": "127.77.250.10"}]
    seen = [await through(provider, spec(p), target) for p in placements]
    assert seen == ["127.0.0.1"] * 3


@pytest.mark.parametrize("engine", ["squid", "proxy.py"])
async def test_a_bad_egress_address_fails_before_anything_starts(
    engine: str, make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider(engine)
    with pytest.raises(PermanentProviderError, match=r"placement\.egress_address: expected"):
        await provider.create(spec({"egress_address": "192.0.2.1"}))
    assert await provider.list_managed() == []
    assert not list((proxy_state_dir / INSTALLATION).glob("*/managed.json"))
