"""Helpers for the end-to-end journey: HTTP calls, waits, process inspection."""

from __future__ import annotations

import abc
import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import nats
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

T = TypeVar("T")
S = TypeVar("S", bound="ThreadedSubscriber")


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 20.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=10
        )

    def proxies(self, **params: str) -> list[dict[str, Any]]:
        r = self.http.get("/v1/proxies", params={"limit": "500", **params})
        assert r.status_code == 200, r.text
        items: list[dict[str, Any]] = r.json()["items"]
        return items

    def proxy(self, proxy_id: str) -> dict[str, Any]:
        r = self.http.get(f"/v1/proxies/{proxy_id}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def phases(self, ids: list[str]) -> dict[str, str]:
        return {pid: self.proxy(pid)["phase"] for pid in ids}


def connect_status(host: str, port: int, target: str, auth_header: str = "") -> str:
    """The status line a proxy answers to CONNECT (raw socket: no client library magic)."""
    with socket.create_connection((host, port), timeout=5) as s:
        request = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth_header}\r\n"
        s.sendall(request.encode())
        return s.recv(4096).split(b"\r\n", 1)[0].decode()


def proxy_processes_for(proxy_id: str) -> list[int]:
    """Top-level processes of one proxy: they mention its id and their parent does not
    (Squid's auth helpers start sessions of their own, so sessions don't tell)."""
    mentions: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if proxy_id.encode() in (entry / "cmdline").read_bytes():
                stat = (entry / "stat").read_text()
                mentions[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return [pid for pid, ppid in mentions.items() if ppid not in mentions]


def marker_pid(state_dir: Path, proxy_id: str) -> int:
    marker = json.loads((state_dir / proxy_id / "managed.json").read_text())
    return int(marker["pid"])


class ThreadedSubscriber(abc.ABC):
    """A plain core-NATS subscriber on `subject`, in a thread of its own (the tests that
    use it are synchronous); subclasses say what `record` keeps of each message."""

    def __init__(self, url: str, subject: str) -> None:
        self.url, self.subject = url, subject
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._nc: NatsClient | None = None

    @abc.abstractmethod
    def record(self, msg: Msg) -> None:
        """Keep what the subclass needs of one message (called under `_lock`)."""

    def __enter__(self: S) -> S:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._subscribe(), self._loop).result(10)
        return self

    async def _subscribe(self) -> None:
        self._nc = await nats.connect(self.url)

        async def record(msg: Msg) -> None:
            with self._lock:
                self.record(msg)

        await self._nc.subscribe(self.subject, cb=record)
        await self._nc.flush()

    def __exit__(self, *exc: object) -> None:
        if self._nc is not None:
            asyncio.run_coroutine_threadsafe(self._nc.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


class EventTap(ThreadedSubscriber):
    """Records the type of every event on `subject`."""

    def __init__(self, url: str, subject: str) -> None:
        super().__init__(url, subject)
        self.seen: list[str] = []

    def record(self, msg: Msg) -> None:
        self.seen.append(msg.subject.removeprefix("proxyfleet.events."))
