"""The async client's background work: a task and the signal that stops it. sync_background
has the same names over a thread; aio.py calls them by name, so tools/unasync.py turns it
into sync.py by renaming this module."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any


class StopSignal:
    """Set once to stop a loop that waits on it between rounds."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, seconds: float) -> bool:
        """Wait until set, at most `seconds`; True when it is set."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), seconds)
        return self._event.is_set()


class Worker:
    """`work()` running as a task from construction until stop()."""

    def __init__(self, work: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> None:
        self._task = asyncio.create_task(work(), name=name)

    async def stop(self) -> None:
        """Cancel the work (an API call in flight is abandoned) and wait until it ends."""
        self._task.cancel()
        # asyncio.wait, not `await task` under suppress(CancelledError): that would also
        # swallow a cancellation of the caller's own task arriving meanwhile.
        await asyncio.wait([self._task])
        if not self._task.cancelled():
            self._task.result()  # the work's own error, as awaiting it would raise
