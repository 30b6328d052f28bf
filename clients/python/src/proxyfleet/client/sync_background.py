"""The blocking client's background work: a thread and the signal that stops it, under the
names aio_background gives the async client's (sync.py is generated from aio.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class StopSignal(threading.Event):
    """Set once to stop a loop that waits on it between rounds: `wait(seconds)` returns
    True when it is set."""


class Worker:
    """`work()` running in a daemon thread from construction until stop()."""

    def __init__(self, work: Callable[[], None], *, name: str) -> None:
        self._thread = threading.Thread(target=work, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Wait until the work ends: it returns once its StopSignal is set (set it first),
        after an API call in flight completes."""
        self._thread.join()
