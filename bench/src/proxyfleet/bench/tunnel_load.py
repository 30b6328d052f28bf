"""The CONNECT load generator of the gateway benchmarks: raw asyncio sockets, the same code
for every path (the gateway, proxy-chain, the Squids directly), each tunnel opened to its
200 and aborted; and turns, which let several paths take the machine in alternating order
so drifting load touches each alike."""

from __future__ import annotations

import asyncio
import base64
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass

from proxyfleet.bench import cpu_ledger
from proxyfleet.bench.gateway_figures import PathTotals


@dataclass(frozen=True)
class Endpoint:
    """Where a CONNECT goes and the credentials it carries."""

    port: int
    username: str
    password: str

    def connect(self, authority: str) -> bytes:
        creds = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return (
            f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
            f"Proxy-Authorization: Basic {creds}\r\n\r\n"
        ).encode()

    def url(self) -> str:
        return f"http://{self.username}:{self.password}@127.0.0.1:{self.port}"


async def _one_connect(ep: Endpoint, authority: str) -> tuple[bool, float]:
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", ep.port)
    try:
        writer.write(ep.connect(authority))
        head = await reader.readuntil(b"\r\n\r\n")
        return head.startswith(b"HTTP/1.1 200"), time.perf_counter() - started
    finally:
        writer.transport.abort()


async def connect_rate(
    endpoints: list[Endpoint], authority: str, workers: int, seconds: float
) -> tuple[float, int, int]:
    """(tunnels set up per second, refused, set up) with `workers` in a loop each."""
    done, refused = 0, 0
    deadline = time.monotonic() + seconds

    async def worker(i: int) -> None:
        nonlocal done, refused
        n = i
        while time.monotonic() < deadline:
            ok, _ = await _one_connect(endpoints[n % len(endpoints)], authority)
            n += workers
            if ok:
                done += 1
            else:
                refused += 1

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(workers)))
    return done / (time.monotonic() - started), refused, done


async def p50_sequential(ep: list[Endpoint], authority: str, count: int) -> float:
    took = []
    for i in range(count):
        ok, t = await _one_connect(ep[i % len(ep)], authority)
        if ok:
            took.append(t)
    return statistics.median(took) * 1000


async def take_turns(
    paths: Mapping[str, list[Endpoint]], authority: str, workers: int, seconds: float,
    rounds: int, trees: Mapping[str, list[int]],
) -> dict[str, PathTotals]:  # fmt: skip
    """Each path's totals over `rounds` turns of `seconds`: the paths in their given order,
    then in reverse, and so on; CPU by part from the ledger around each turn."""
    totals = {name: PathTotals() for name in paths}
    for r in range(rounds):
        for name in list(paths) if r % 2 == 0 else list(paths)[::-1]:
            before = cpu_ledger.snapshot(trees)
            started = time.monotonic()
            _, refused, done = await connect_rate(paths[name], authority, workers, seconds)
            took = time.monotonic() - started
            spent = cpu_ledger.per_operation(before, cpu_ledger.snapshot(trees), 1)
            totals[name].add(done, refused, took, spent)
    return totals
