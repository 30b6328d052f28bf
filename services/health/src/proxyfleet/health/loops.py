"""Which event loop the health service runs on.

uvloop (libuv, with its TLS protocol in Cython) takes a good part of the per-probe CPU
off the standard library's pure-Python transports and TLS protocol; `asyncio` stays
available as a switch (`--loop asyncio`) for debugging or a platform uvloop lacks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

LOOPS = ("uvloop", "asyncio")
"""Accepted values of --loop, the default first."""


def run(main: Coroutine[Any, Any, T], loop: str = LOOPS[0]) -> T:
    """Run `main` to completion on a new event loop of the named kind."""
    if loop == "uvloop":
        import uvloop  # noqa: PLC0415  (only imported when chosen)

        return uvloop.run(main)
    if loop == "asyncio":
        return asyncio.run(main)
    raise ValueError(f"loop {loop!r}: expected one of {', '.join(LOOPS)}")
