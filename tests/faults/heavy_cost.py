"""What recording costs the heavy load: requests/s of heavy_cycle.lua with and without
its records, and of the bench's cycle.lua (2 threads, no records), alternated over a few
short rounds on one fleet like the heavy rows'; and wrk's own CPU time per request, which
a busy shared machine disturbs far less than requests/s. Not a test (minutes):
`.venv/bin/python -m tests.faults.heavy_cost`."""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time

import httpx
from tests.faults.harness import Fleet, auth
from tests.faults.heavy import HeavyLoad
from tests.faults.heavy_scenarios import HEAVY_PROXIES

from proxyfleet.bench.wrkrun import Load, run_wrk


def _wait_no_active_lease(fleet: Fleet, timeout: float = 15.0) -> None:
    """A run's last grants (answered after wrk stopped) hold proxies until their TTL."""
    with httpx.Client(base_url=fleet.stack.api_url, headers=auth(fleet.stack.client_token)) as c:
        fleet.wait_quietly(lambda: not c.get("/v1/leases").json()["items"], timeout)


def _heavy(fleet: Fleet, seconds: int, record: bool) -> float:
    load = HeavyLoad(
        fleet.stack.api_url, fleet.stack.client_token, seconds, fleet.base, record=record
    )
    with load:
        pass
    return load.wrk_rps


def _bench_cycle(fleet: Fleet, seconds: int) -> float:
    load = Load("cycle", fleet.stack.api_url + "/v1/leases", fleet.stack.client_token, seconds)
    result, _ = asyncio.run(run_wrk(load, fleet.base))
    return result.rps


def _children_cpu() -> float:
    """CPU seconds of the children waited for so far (wrk: the fleet's run on)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    args = parser.parse_args()
    fleet = Fleet(proxies=HEAVY_PROXIES, cooldown=0.0, health_interval=2.0)
    runs: dict[str, list[tuple[float, float]]] = {
        "recorded": [],
        "not recorded": [],
        "bench cycle.lua": [],
    }
    try:
        fleet.start()
        for i in range(args.rounds):
            for name, values in runs.items():
                _wait_no_active_lease(fleet)
                cpu = _children_cpu()
                if name == "bench cycle.lua":
                    rps = _bench_cycle(fleet, args.seconds)
                else:
                    rps = _heavy(fleet, args.seconds, record=name == "recorded")
                us = (_children_cpu() - cpu) / max(1.0, rps * args.seconds) * 1e6
                values.append((rps, us))
                stamp = time.strftime("%H:%M:%S")
                print(f"round {i + 1} {stamp} {name}: {rps:,.0f} req/s, wrk {us:.1f} us CPU/req")
    finally:
        fleet.close()
    for name, values in runs.items():
        each = ", ".join(f"{v:,.0f}" for v, _ in values)
        rps = statistics.median(v for v, _ in values)
        us = statistics.median(u for _, u in values)
        print(f"{name}: median {rps:,.0f} req/s ({each}); wrk's CPU a request {us:.1f} us")


if __name__ == "__main__":
    main()
