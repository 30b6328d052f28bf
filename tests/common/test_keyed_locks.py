"""KeyedLocks: holders of one key run one after another, other keys do not wait, and no
lock outlives its last user."""

from __future__ import annotations

import asyncio

from proxyfleet.common.runner.keyed import KeyedLocks


async def test_one_key_runs_one_at_a_time_and_other_keys_do_not_wait() -> None:
    locks = KeyedLocks()
    order: list[str] = []
    first_in = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with locks.hold("p1"):
            order.append("first in")
            first_in.set()
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with locks.hold("p1"):
            order.append("second in")

    async def other() -> None:
        async with locks.hold("p2"):
            order.append("other in")

    a = asyncio.create_task(first())
    await first_in.wait()
    b, c = asyncio.create_task(second()), asyncio.create_task(other())
    await c  # another key goes ahead while p1 is held
    assert order == ["first in", "other in"]
    release.set()
    await asyncio.gather(a, b)
    assert order == ["first in", "other in", "first out", "second in"]
    assert len(locks) == 0


async def test_a_holder_that_raises_lets_the_next_in_and_leaves_nothing() -> None:
    locks = KeyedLocks()

    async def boom() -> None:
        async with locks.hold("p1"):
            raise RuntimeError("provider down")

    results = await asyncio.gather(boom(), boom(), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert len(locks) == 0
