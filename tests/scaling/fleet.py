"""Three replicas of every service on one NATS and Redis, and what the scaling tests read
from them: the probe results on NATS (each process's /metrics through tests/takeover.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import msgspec
from nats.aio.msg import Msg
from tests.e2e.journey import ThreadedSubscriber

from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ProbeResult
from proxyfleet.devstack.servers import free_port, wait_tcp
from proxyfleet.devstack.stack import Stack


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


class ProbeTap(ThreadedSubscriber):
    """Records the start time of each probe result, by proxy."""

    def __init__(self, url: str) -> None:
        super().__init__(url, subjects.PROBE_PREFIX + ".>")
        self.times: dict[str, list[float]] = defaultdict(list)

    def record(self, msg: Msg) -> None:
        result = msgspec.json.decode(msg.data, type=ProbeResult)
        self.times[result.proxy_id].append(result.time)

    def since(self, start: float, ids: set[str]) -> dict[str, list[float]]:
        """The probe times of `ids` from `start` on (wall clock, as the results carry)."""
        return {pid: sorted(t for t in self.times.get(pid, []) if t >= start) for pid in ids}
