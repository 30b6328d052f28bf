"""A provisioner replica killed with SIGKILL while it handles creates, and another left to
finish them: what the takeover tests of tests/scaling (local), tests/gcp and tests/kvm share.

The process helpers block (HTTP to /metrics and /readyz, process waits): an async test
calls them through `asyncio.to_thread`, so its event loop keeps serving what runs on it
(the KVM tests' SSH server)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tests.provisioner.helpers import add_pending_proxy, wait_until

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.common.wire.models import Phase
from proxyfleet.devstack.servers import free_port

IN_PROGRESS = "proxyfleet_intents_in_progress"
HANDLED = "proxyfleet_messages_handled_total"


def metric(url: str, name: str, **labels: str) -> float:
    """The sum of the samples called `name` with these labels on one /metrics page."""
    text = httpx.get(url, timeout=5).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def kill_while_handling(
    metrics_url: str,
    proc: subprocess.Popen[bytes],
    at_least: int = 1,
    within: float = 10.0,
) -> float:
    """SIGKILL `proc` (by its pid) once its replica handles at least `at_least` intents; the
    time of the kill (`time.monotonic()`). Polled without a pause: a local create takes a
    fraction of a second. It says no goodbye: its intents stay unacked until their
    ack-wait passes."""
    deadline = time.monotonic() + within
    while metric(metrics_url, IN_PROGRESS) < at_least:
        assert time.monotonic() < deadline, f"pid {proc.pid} never handled {at_least} intents"
    os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    proc.wait(5)
    return killed_at


@dataclass
class Replica:
    """One provisioner process a test started: its pid, its metrics port and its log."""

    proc: subprocess.Popen[bytes]
    metrics_port: int
    log: Path

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def metric(self, name: str, **labels: str) -> float:
        return metric(self.metrics_url, name, **labels)

    def ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.metrics_port}/readyz"
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


class ProvisionerProcesses:
    """Replicas of one provisioner, each started from the same command line with a metrics
    port of its own and a log in `log_dir`. Those still running at the end are killed by pid."""

    def __init__(self, argv: list[str], log_dir: Path) -> None:
        self._argv = argv
        self._dir = log_dir
        self.started: list[Replica] = []

    def start(self, *extra: str, ready_within: float = 60.0) -> Replica:
        """One more replica (`extra` flags after the common ones), once it answers /readyz."""
        port = free_port()
        log = self._dir / f"replica-{len(self.started)}.log"
        with log.open("wb") as out:
            argv = [*self._argv, "--metrics-port", str(port), *extra]
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        replica = Replica(proc, port, log)
        self.started.append(replica)
        deadline = time.monotonic() + ready_within
        while not replica.ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"replica not ready: {replica.log_text()[-3000:]}")
            time.sleep(0.1)
        return replica

    def __enter__(self) -> ProvisionerProcesses:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        for replica in self.started:
            if replica.proc.poll() is None:
                replica.proc.kill()
                replica.proc.wait(10)


Busy = Callable[[list[str]], Awaitable[bool]]
"""Whether the creates of these proxies have got where the test wants them to wait."""


@contextlib.asynccontextmanager
async def registry_on(redis_url: str, db: int) -> AsyncIterator[tuple[ProxyRegistry, str]]:
    """A registry in real time on Redis database `db`, emptied first, and that database's
    URL for the replicas: no other test's processes (health, gc) act on these proxies."""
    url = redis_url.rsplit("/", 1)[0] + f"/{db}"
    client = connect_redis(url)
    await client.flushdb()
    try:
        yield ProxyRegistry(client, SystemClock()), url
    finally:
        await client.aclose()


async def hand_over(
    replica: Replica,
    registry: ProxyRegistry,
    provider: str,
    zone: str,
    count: int,
    busy: Busy,
    within: float = 60.0,
) -> tuple[list[str], float]:
    """`count` pending proxies in `zone`, once `replica` (the only one with free slots)
    handles all of their creates and `busy(ids)` says they wait where the test wants them.
    Their ids and when they were made (`time.monotonic()`). The create intents go through
    the registry's outbox, which the running replicas relay: nothing is published twice."""
    made = time.monotonic()
    ids = [(await add_pending_proxy(registry, provider, zone=zone)).id for _ in range(count)]

    async def holds_them() -> bool:
        held = await asyncio.to_thread(replica.metric, IN_PROGRESS)
        return held >= count and await busy(ids)

    await wait_until(holds_them, within, f"{count} creates in hand and busy")
    return ids, made


async def all_in_phase(registry: ProxyRegistry, ids: list[str], phase: Phase) -> bool:
    for proxy_id in ids:
        proxy = await registry.get(proxy_id)
        if proxy is None or proxy.phase is not phase:
            return False
    return True
