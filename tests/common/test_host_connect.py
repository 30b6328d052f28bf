"""The start-up backoff: delays double up to a cap; only outages are tried again, each
failed attempt said once."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError, MessagingUnavailable, StoreUnavailable
from proxyfleet.common.host.connect import FIRST_DELAY, MAX_DELAY, delay, keep_trying
from proxyfleet.common.observability.logging import configure_logging


def test_delays_double_from_the_first_up_to_the_cap() -> None:
    delays = [delay(n) for n in range(1, 10)]
    assert delays[:3] == [FIRST_DELAY, 2 * FIRST_DELAY, 4 * FIRST_DELAY]
    assert max(delays) == MAX_DELAY
    assert delays == sorted(delays)
    assert delay(10_000) == MAX_DELAY


async def test_outages_are_tried_again_and_said_once_per_attempt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("hosted", "info", "json")
    failures: list[Exception] = [
        StoreUnavailable("Redis is loading"),
        MessagingUnavailable("no servers"),
    ]
    slept: list[float] = []

    async def attempt() -> str:
        if failures:
            raise failures.pop(0)
        return "connected"

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    assert await keep_trying("hosted", "redis", "redis://x", attempt, sleep) == "connected"
    assert slept == [delay(1), delay(2)]
    out = capsys.readouterr().out
    assert out.count('"service.backend_unreachable"') == 2
    assert '"attempt": 2' in out
    assert '"retry_in_s": 1.0' in out
    assert "Traceback" not in out


async def test_anything_but_an_outage_is_raised_at_once() -> None:
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise ConfigError("bad password")

    async def sleep(seconds: float) -> None:
        raise AssertionError("no wait for an error that is not an outage")

    with pytest.raises(ConfigError):
        await keep_trying("hosted", "redis", "redis://x", attempt, sleep)
    assert calls == 1
