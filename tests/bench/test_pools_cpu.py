"""The pool benchmark's CPU measure on a small seeded fleet: steady passes, timed, a figure."""

from __future__ import annotations

import redis.asyncio as aioredis

from proxyfleet.bench.pools_cpu import PASSES, cpu_figure, pass_cost


async def test_steady_passes_over_seeded_pools_are_timed(redis_client: aioredis.Redis) -> None:
    cost = await pass_cost(redis_client, 300, 3, quarantine=True)
    assert len(cost.cpu_ms) == len(cost.wall_ms) == PASSES
    assert all(ms > 0 for ms in cost.cpu_ms)
    figure = cpu_figure(cost, 300, 3, quarantine=True)
    assert figure.what == (
        "pool controller CPU per pass, 300 pooled proxies (3 pools of 100, with a quarantine rule)"
    )
    assert (figure.unit, figure.value) == ("ms", round(cost.cpu_p50, 1))
    assert await redis_client.dbsize() == 0  # it leaves the database as it found it
