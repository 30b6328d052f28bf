"""The local supervisor against real proxy processes: a proxy process killed (by its pid,
one this test started through the provider) comes back on its port and passes a real
CONNECT with its credentials; past the bound it stays down, counted and logged."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_local import commands, metrics
from proxyfleet.provisioner_local.adapter import LocalProvider
from proxyfleet.provisioner_local.files import read_marker
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.processes import is_engine
from proxyfleet.provisioner_local.restarts import RestartPolicy
from proxyfleet.provisioner_local.supervisor import Supervisor

from .helpers import ENGINES, INSTALLATION, connect_status

MakeProvider = Callable[..., LocalProvider]


def _spec() -> ProxySpec:
    return ProxySpec(
        proxy_id=f"p{secrets.token_hex(6)}",
        installation_id=INSTALLATION,
        zone="local",
        username="alice",
        password=secrets.token_urlsafe(18),
    )


def _pid(state_dir: Path, proxy_id: str) -> int:
    marker = read_marker(ProxyFolder(state_dir / INSTALLATION / proxy_id, proxy_id).marker)
    assert marker is not None
    return marker.pid


def _kill(state_dir: Path, proxy_id: str) -> int:
    """SIGKILL the proxy's engine process (its pid from the marker) and wait until it is
    gone; returns the pid."""
    pid = _pid(state_dir, proxy_id)
    folder = ProxyFolder(state_dir / INSTALLATION / proxy_id, proxy_id)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while is_engine(pid, commands.engine_signatures(folder)):
        assert time.monotonic() < deadline, f"{pid} still running"
        time.sleep(0.02)
    return pid


def _restarts(result: str) -> float:
    value: float = metrics.RESTARTS.labels(result=result)._value.get()
    return value


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_killed_proxy_is_restarted_and_answers_a_connect_again(
    engine: str, make_local_provider: MakeProvider, proxy_state_dir: Path, tcp_target: int
) -> None:
    provider = make_local_provider(engine, connect_ports=(443, tcp_target))
    wanted = _spec()
    done = await provider.create(wanted)
    creds, target = f"alice:{wanted.password}", f"127.0.0.1:{tcp_target}"
    assert await asyncio.to_thread(connect_status, done.port, target, creds) == 200
    clock = ManualClock()
    supervisor = Supervisor(provider, RestartPolicy(), interval=1.0, clock=clock)
    await supervisor.check()  # alive: nothing to do
    assert _pid(proxy_state_dir, wanted.proxy_id) > 0

    restarted = _restarts("restarted")
    old = await asyncio.to_thread(_kill, proxy_state_dir, wanted.proxy_id)
    assert await provider.dead() == [wanted.proxy_id]
    await supervisor.check()  # the first restart is at once; it waits until listening
    new = _pid(proxy_state_dir, wanted.proxy_id)
    assert new not in (0, old)
    assert await provider.dead() == []
    assert _restarts("restarted") == restarted + 1
    assert await asyncio.to_thread(connect_status, done.port, target, creds) == 200
    assert await asyncio.to_thread(connect_status, done.port, target, "alice:wrong") == 407


async def test_past_the_bound_a_dead_proxy_is_left_down_and_said_once(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider("squid")
    wanted = _spec()
    await provider.create(wanted)
    clock = ManualClock()
    policy = RestartPolicy(max_restarts=1, window=300.0, backoff=1.0)
    supervisor = Supervisor(provider, policy, interval=1.0, clock=clock)
    exhausted = _restarts("exhausted")

    await asyncio.to_thread(_kill, proxy_state_dir, wanted.proxy_id)
    await supervisor.check()
    assert await provider.dead() == []
    clock.advance(10)
    gone = await asyncio.to_thread(_kill, proxy_state_dir, wanted.proxy_id)
    for _ in range(3):  # every later check: still down, said once
        await supervisor.check()
        clock.advance(10)
    assert await provider.dead() == [wanted.proxy_id]
    assert _pid(proxy_state_dir, wanted.proxy_id) == gone
    assert _restarts("exhausted") == exhausted + 1

    clock.advance(300)  # the restart left the window: the supervisor tries again
    await supervisor.check()
    assert await provider.dead() == []


async def test_a_deleted_proxy_is_not_restarted(
    make_local_provider: MakeProvider, proxy_state_dir: Path
) -> None:
    provider = make_local_provider("squid")
    wanted = _spec()
    done = await provider.create(wanted)
    supervisor = Supervisor(provider, RestartPolicy(), interval=1.0, clock=ManualClock())
    await provider.delete(wanted.proxy_id, done.resource_id)
    await supervisor.check()
    assert await provider.dead() == []
    assert await provider.list_managed() == []
