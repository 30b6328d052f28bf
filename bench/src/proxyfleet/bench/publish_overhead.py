"""Per-message cost of publishing through FastStream's NatsBroker against nats-py directly,
on a local nats-server of its own: the figure behind keeping the hot publishers (API
events, probe results) on nats-py (docs/decisions/outbox-and-events.md, E6).

`python -m proxyfleet.bench.publish_overhead [messages]` prints CPU µs per message (this
process's CPU time over the publishes, which moves less than wall time on a shared machine)
for core NATS publishes (how health sends probe results and the API's event sink writes
events) and for JetStream publishes that await their ack.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
from faststream.nats import NatsBroker

from proxyfleet.common.messaging.jetstream import connect_nats, ensure_streams
from proxyfleet.common.wire.models import ProbeResult
from proxyfleet.devstack.servers import start_nats

_BODY = msgspec.json.encode(
    ProbeResult(proxy_id="p0123456789abcdef", time=1.7e9, ok=True, latency_ms=12.5)
)


async def _cpu_us_per_message(publish: Callable[[], Awaitable[object]], count: int) -> float:
    for _ in range(min(count // 10, 500)):  # warm up
        await publish()
    started = time.process_time()
    for _ in range(count):
        await publish()
    return (time.process_time() - started) / count * 1e6


async def measure(nats_url: str, count: int) -> dict[str, float]:
    nc = await connect_nats(nats_url, "publish-overhead")
    js = nc.jetstream()
    await ensure_streams(js)
    broker = NatsBroker(nats_url)
    await broker.start()
    core = "proxyfleet.probes.bench"
    stream = "proxyfleet.events.proxy.bench"
    try:
        figures = {
            "core, nats-py nc.publish": await _cpu_us_per_message(
                lambda: nc.publish(core, _BODY), count
            ),
            "core, FastStream broker.publish": await _cpu_us_per_message(
                lambda: broker.publish(_BODY, core), count
            ),
            "JetStream, nats-py js.publish (ack awaited)": await _cpu_us_per_message(
                lambda: js.publish(stream, _BODY), count // 10
            ),
            "JetStream, FastStream broker.publish(stream=...)": await _cpu_us_per_message(
                lambda: broker.publish(_BODY, stream, stream="PROXYFLEET_EVENTS"), count // 10
            ),
        }
        await nc.flush()
    finally:
        await broker.stop()
        await nc.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    count = int(args[0]) if args else 50_000
    server = start_nats(Path(tempfile.mkdtemp(prefix="pf-publish-")))
    try:
        figures = asyncio.run(measure(server.url, count))
    finally:
        server.stop()
    for name, us in figures.items():
        print(f"{name}: {us:.1f} µs CPU per message")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
