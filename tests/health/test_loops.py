"""The event loop switch: uvloop by default, the standard library's on request."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.health import loops
from proxyfleet.health.settings import HealthSettings


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_uvloop_is_the_default() -> None:
    assert HealthSettings().loop == "uvloop"
    assert issubclass(loops.run(_loop_type()), uvloop.Loop)


def test_asyncio_on_request() -> None:
    kind = loops.run(_loop_type(), "asyncio")
    assert not issubclass(kind, uvloop.Loop)
    assert issubclass(kind, asyncio.BaseEventLoop)


def test_unknown_loop_is_refused() -> None:
    coro = _loop_type()
    with pytest.raises(ValueError, match="loop 'trio': expected one of uvloop, asyncio"):
        loops.run(coro, "trio")
    coro.close()
    with pytest.raises(ConfigError, match="--loop: expected one of uvloop, asyncio, got 'trio'"):
        HealthSettings(loop="trio")
