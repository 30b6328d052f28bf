"""The async client's background worker: stop() waits for the work to end, raises the
work's own error, and never swallows a cancellation of the task that called it."""

from __future__ import annotations

import asyncio

import pytest

from proxyfleet.client.aio_background import StopSignal, Worker


async def test_stop_cancels_the_work_and_waits_for_it() -> None:
    ended = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            ended.set()

    worker = Worker(work, name="w")
    await asyncio.sleep(0)
    await worker.stop()
    assert ended.is_set()


async def test_a_cancelled_caller_stays_cancelled_while_stop_waits() -> None:
    cleaning = asyncio.Event()
    finish = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(60)
        finally:  # a call in flight winding down after the cancel
            cleaning.set()
            await finish.wait()

    worker = Worker(work, name="w")
    await asyncio.sleep(0)
    caller = asyncio.create_task(worker.stop())
    await asyncio.wait_for(cleaning.wait(), 5)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 5)
    finish.set()


async def test_stop_raises_the_works_own_error() -> None:
    async def work() -> None:
        raise RuntimeError("renew crashed")

    worker = Worker(work, name="w")
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="renew crashed"):
        await worker.stop()


async def test_the_stop_signal_wakes_a_waiting_loop() -> None:
    signal = StopSignal()
    assert await signal.wait(0.01) is False
    asyncio.get_running_loop().call_soon(signal.set)
    assert await signal.wait(5) is True
