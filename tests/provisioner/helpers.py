"""Helpers of the provisioner tests (plain functions; the fixtures are in conftest)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
from nats.aio.msg import Msg

from proxyfleet.common.messaging.jetstream import event_decoder
from proxyfleet.common.runner import RunnerSettings
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.events import Event
from proxyfleet.common.wire.models import Phase, Proxy

INSTALLATION = "test-inst"
ENGINES = ["squid", "proxy.py"]


def processes_referring_to(text: str) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (Path(entry.path) / "cmdline").read_bytes():
                    pids.append(int(entry.name))
    return pids


def kill_processes_referring_to(text: str) -> None:
    """SIGKILL every process mentioning text, with its whole process group (proxy.py forks
    workers that outlive a killed parent); a second pass catches one forked meanwhile."""
    for attempt in range(2):
        for pid in processes_referring_to(text):
            with contextlib.suppress(OSError):
                group = os.getpgid(pid)
                if group != os.getpgrp():  # never our own group (pytest and its children)
                    os.killpg(group, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if attempt == 0:
            time.sleep(0.2)


def connect_status(port: int, target: str, credentials: str | None = None) -> int:
    """The status line code of a CONNECT through the proxy on 127.0.0.1:port."""
    head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
    if credentials is not None:
        head += f"Proxy-Authorization: Basic {base64.b64encode(credentials.encode()).decode()}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall((head + "\r\n").encode())
        reply = s.recv(256)
    return int(reply.split(b" ", 2)[1])


async def add_pending_proxy(
    registry: ProxyRegistry,
    provider: str,
    *,
    age: float = 0.0,
    proxy_id: str = "",
    zone: str = "local",
    labels: dict[str, str] | None = None,
    placement: dict[str, str] | None = None,
) -> Proxy:
    """A pending proxy; its create intent and proxy.pending event go to the outbox."""
    now = time.time() - age
    proxy = Proxy(
        id=proxy_id or f"p{secrets.token_hex(8)}",
        provider=provider,
        zone=zone,
        phase=Phase.PENDING,
        gen=1,
        username="user1",
        password=secrets.token_urlsafe(18),
        created_at=now,
        updated_at=now,
        labels=labels or {},
        placement=placement or {},
    )
    assert await registry.create(proxy)
    return proxy


async def wait_until(
    check: Callable[[], Awaitable[bool]], within: float = 10.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.02)


async def wait_for_phase(
    registry: ProxyRegistry, proxy_id: str, phase: Phase, within: float = 10.0
) -> Proxy:
    async def reached() -> bool:
        proxy = await registry.get(proxy_id)
        return proxy is not None and proxy.phase is phase

    await wait_until(reached, within, f"{proxy_id} to be {phase}")
    proxy = await registry.get(proxy_id)
    assert proxy is not None
    return proxy


class EventLog:
    """Every proxy event seen on NATS since the fixture started."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def on_msg(self, msg: Msg) -> None:
        with contextlib.suppress(msgspec.DecodeError):
            self.events.append(event_decoder.decode(msg.data))

    def of(self, proxy_id: str) -> list[Event]:
        return [e for e in self.events if e.proxy_id == proxy_id]

    def types_of(self, proxy_id: str) -> list[str]:
        return [e.type for e in self.of(proxy_id)]


def fast_settings(provider: str, **overrides: object) -> RunnerSettings:
    values: dict[str, object] = {
        "provider": provider,
        "boot_timeout": 60.0,
        "ack_wait": 2.0,
        "heartbeat_interval": 0.5,
        "max_deliver": 4,
        "backoff_initial": 0.05,
        "backoff_max": 0.2,
        "backoff_jitter": 0.0,
        "fetch_timeout": 0.2,
        "reconcile_interval": 0.2,
        "stale_after": 600.0,
        "shutdown_grace": 2.0,
    }
    values.update(overrides)
    return RunnerSettings(**values)  # type: ignore[arg-type]
