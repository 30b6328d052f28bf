"""The probe loop and failed proxies, end to end (real Redis, NATS, Squid and target): a
failed external proxy is probed with backoff and serves again once its upstream is back;
a failed managed proxy is never probed."""

from __future__ import annotations

import asyncio
import time

from tests.health.conftest import Collector, MakeProxy, ProxyProcess, RunWorker, events_of

from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase

REPROBE = {"failed_reprobe_min": 0.3, "failed_reprobe_max": 0.6}


async def _wait_phase(registry: ProxyRegistry, proxy_id: str, phase: Phase) -> None:
    deadline = time.monotonic() + 10.0
    while True:
        proxy = await registry.get(proxy_id)
        assert proxy is not None
        if proxy.phase is phase:
            return
        assert time.monotonic() < deadline, f"{proxy_id} is {proxy.phase}, expected {phase}"
        await asyncio.sleep(0.02)


def _results(collector: Collector, proxy_id: str) -> list[bool]:
    return [r.ok for r in collector.items if r.proxy_id == proxy_id]


async def test_a_failed_external_proxy_serves_again_once_its_upstream_is_back(
    own_squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    probe_results: Collector,
    events: Collector,
    delete_intents: Collector,
) -> None:
    proxy = await make_proxy(own_squid.port, phase=Phase.FAILED, external=True)
    own_squid.kill()
    async with run_worker(**REPROBE):
        await probe_results.wait_for(lambda: len(_results(probe_results, proxy.id)) >= 2)
        assert not any(_results(probe_results, proxy.id))
        stored = await registry.get(proxy.id)
        assert stored is not None
        assert stored.phase is Phase.FAILED
        assert stored.last_probe_error.startswith("proxy unreachable: ")
        own_squid.start()
        await _wait_phase(registry, proxy.id, Phase.READY)
    back = await registry.get(proxy.id)
    assert back is not None
    assert (back.egress_ip, back.reason, back.last_probe_error) == ("127.0.0.1", "", "")
    assert [e.type for e in events_of(events, proxy.id)][-1] == "proxy.ready"
    assert delete_intents.items == []  # nothing outside Proxyfleet is deleted


async def test_failed_external_probes_wait_longer_and_longer(
    make_proxy: MakeProxy,
    squid: ProxyProcess,
    run_worker: RunWorker,
    probe_results: Collector,
) -> None:
    """Each wait as long as the proxy has been failed, from 0.5 s to 1 s; meanwhile a ready
    proxy is probed every 0.3 s. Only the lower bounds are asserted: a probe is never
    early, but a loaded machine may run it late (the exact schedule is
    test_failed_reprobe's, on a manual clock)."""
    ready = await make_proxy(squid.port, phase=Phase.READY)
    failed = await make_proxy(1, phase=Phase.FAILED, external=True)  # nothing listens on 1
    async with run_worker(failed_reprobe_min=0.5, failed_reprobe_max=1.0):
        await probe_results.wait_for(lambda: len(_results(probe_results, failed.id)) >= 4)
    times = [r.time for r in probe_results.items if r.proxy_id == failed.id]
    waits = [b - a for a, b in zip([failed.updated_at, *times], times, strict=False)]
    # failed at 0: probed at 0.5, 1 (failed 0.5 s: waits 0.5 s), 2 and 3 (the 1 s cap)
    for wait, expected in zip(waits, [0.5, 0.5, 1.0, 1.0], strict=False):
        assert wait >= expected - 0.05, waits  # slack for the float times only
    assert len(_results(probe_results, ready.id)) >= len(times)


async def test_a_failed_managed_proxy_is_not_probed(
    make_proxy: MakeProxy,
    squid: ProxyProcess,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    probe_results: Collector,
) -> None:
    ready = await make_proxy(squid.port, phase=Phase.READY)
    managed = await make_proxy(squid.port, phase=Phase.FAILED)  # would pass a probe
    async with run_worker(**REPROBE):
        # ten intervals of the ready one: several of the failed one's would-be waits
        await probe_results.wait_for(lambda: len(_results(probe_results, ready.id)) >= 10)
    assert _results(probe_results, managed.id) == []
    stored = await registry.get(managed.id)
    assert stored is not None
    assert stored.phase is Phase.FAILED
