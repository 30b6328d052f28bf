"""Three replicas of every service on one NATS and Redis, and what the scaling tests read
from them: each process's /metrics, the probe results on NATS, the proxies' processes."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from dataclasses import dataclass, field

import httpx
import msgspec
import nats
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from prometheus_client.parser import text_string_to_metric_families

from proxyfleet.common import subjects
from proxyfleet.common.models import ProbeResult
from proxyfleet.devstack.servers import free_port, wait_tcp
from proxyfleet.devstack.stack import Stack


def metric(url: str, name: str, **labels: str) -> float:
    """The sum of the samples called `name` with these labels on one /metrics page."""
    text = httpx.get(url, timeout=5).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def with_flag(args: list[str], name: str, value: str) -> list[str]:
    i = args.index(name)
    return [*args[: i + 1], value, *args[i + 2 :]]


@dataclass
class Replicas:
    """The stack's services plus more replicas started next to them, by name."""

    stack: Stack
    provisioners: list[str] = field(default_factory=lambda: ["provisioner"])
    healths: list[str] = field(default_factory=lambda: ["health"])
    api_urls: list[str] = field(default_factory=list)

    def add(self, base: str, n: int) -> None:
        """Start replicas base-2 .. base-(n) with base's command line on other ports."""
        for i in range(2, n + 1):
            name = f"{base}-{i}"
            args = self.stack.commands[base]
            port = free_port()
            args = with_flag(args, "--port" if base == "api" else "--metrics-port", str(port))
            self.stack.commands[name] = args
            self.stack.start_service(name, args)
            if base == "api":
                self.api_urls.append(f"http://127.0.0.1:{port}")
            else:
                (self.provisioners if base == "provisioner" else self.healths).append(name)
        for name in self.stack.commands:
            if name.startswith(("api", "provisioner", "health")):
                wait_tcp("127.0.0.1", self.port_of(name), timeout=60)

    def port_of(self, name: str) -> int:
        args = self.stack.commands[name]
        return int(flag(args, "--port" if name.startswith("api") else "--metrics-port"))

    def metrics_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port_of(name)}/metrics"

    def restart(self, name: str) -> None:
        self.stack.start_service(name, self.stack.commands[name])
        wait_tcp("127.0.0.1", self.port_of(name), timeout=60)


class ProbeTap:
    """A core-NATS subscriber on every probe result, in a thread of its own: the start
    time of each probe, by proxy."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.times: dict[str, list[float]] = defaultdict(list)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._nc: NatsClient | None = None

    def __enter__(self) -> ProbeTap:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._subscribe(), self._loop).result(10)
        return self

    async def _subscribe(self) -> None:
        self._nc = await nats.connect(self.url)

        async def record(msg: Msg) -> None:
            result = msgspec.json.decode(msg.data, type=ProbeResult)
            self.times[result.proxy_id].append(result.time)

        await self._nc.subscribe(subjects.PROBE_PREFIX + ".>", cb=record)

    def __exit__(self, *exc: object) -> None:
        if self._nc is not None:
            asyncio.run_coroutine_threadsafe(self._nc.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def since(self, start: float, ids: set[str]) -> dict[str, list[float]]:
        """The probe times of `ids` from `start` on (wall clock, as the results carry)."""
        return {pid: sorted(t for t in self.times.get(pid, []) if t >= start) for pid in ids}
