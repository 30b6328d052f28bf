"""Two real `proxyfleet-gc` processes on one NATS and Redis: one runs the rounds, the
other sends nothing; SIGKILL the one running them and the other takes over within the
round lock's ttl plus one interval."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.gc.test_gc_cli import ME, PROVIDER, SCRIPT, Answer, common_args, log_lines, resource

from proxyfleet.common.core.ids import new_proxy_id, resource_name
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import ResourceList

INTERVAL = 0.3
TTL = 1.5  # above the interval plus the request timeout (1 s)
SLACK = 1.0
"""The standby's round itself and a busy machine's scheduling, on top of ttl + interval."""


class Replica:
    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log

    def lines(self) -> list[dict[str, Any]]:
        return log_lines(self.log.read_text()) if self.log.exists() else []

    def events(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line["event"] == name]


async def start(args: list[str], log: Path) -> Replica:
    with log.open("w") as out:
        proc = await asyncio.create_subprocess_exec(
            SCRIPT,
            *args,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PROXYFLEET_LOG_FORMAT": "json", "PYTHONUNBUFFERED": "1"},
        )
    return Replica(proc, log)


async def until(check: Callable[[], Any], within: float) -> None:
    """Poll the logs (a file offers no event to wait on) until `check()`, bounded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"not true within {within:g} s: {check}")
        await asyncio.sleep(0.05)


def rounds_sent(replica: Replica) -> list[list[str]]:
    """The resource ids each finished round of this replica asked to delete, in order."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in replica.lines():
        if line["event"] == "gc.delete_requested":
            current.append(line["resource_id"])
        elif line["event"] == "gc.round" and line["result"] != "held":
            out.append(sorted(current))
            current = []
    return out


async def test_a_killed_holder_s_rounds_go_to_the_other_within_ttl_and_an_interval(
    nats_url: str,
    redis_url: str,
    providers_yaml: Path,
    registry: ProxyRegistry,
    answer: Answer,
    tmp_path: Path,
) -> None:
    await registry.installation.mark(ME)  # the test clock's start: before every resource
    orphans = [new_proxy_id() for _ in range(3)]
    expected = sorted(resource_name(p) for p in orphans)
    answer(ResourceList(provider=PROVIDER, resources=[resource(p, 3600) for p in orphans]))
    args = [
        *common_args(nats_url, redis_url, providers_yaml),
        *("--interval", str(INTERVAL), "--request-timeout", "1", "--round-lock-ttl", str(TTL)),
        *("--max-delete-share", "1.0", "--log-level", "debug"),
    ]
    replicas = [await start(args, tmp_path / f"gc-{i}.log") for i in range(2)]
    try:
        # One runs the rounds, the other finds them held; a few rounds of each.
        def settled() -> bool:
            sent = [len(rounds_sent(r)) for r in replicas]
            held = [len(r.events("gc.provider_held")) for r in replicas]
            return sorted(sent)[1] >= 3 and sorted(held)[1] >= 3

        await until(settled, 20)
        [leader] = [r for r in replicas if rounds_sent(r)]
        [standby] = [r for r in replicas if r is not leader]
        assert all(sent == expected for sent in rounds_sent(leader))
        assert not standby.events("gc.delete_requested")
        assert not leader.events("gc.provider_held")

        leader.proc.send_signal(signal.SIGKILL)
        await leader.proc.wait()
        killed = time.time()

        await until(lambda: standby.events("gc.delete_requested"), TTL + INTERVAL + 10)
        first = standby.events("gc.delete_requested")[0]
        took = datetime.fromisoformat(first["timestamp"]).timestamp() - killed
        assert took <= TTL + INTERVAL + SLACK, took
        await until(lambda: len(rounds_sent(standby)) >= 2, 10)
        assert all(sent == expected for sent in rounds_sent(standby))
    finally:
        for r in replicas:
            if r.proc.returncode is None:
                r.proc.kill()
                await r.proc.wait()
