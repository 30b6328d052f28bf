"""Bounded exponential backoff between deliveries of one intent. Pure."""

from __future__ import annotations

import random

from proxyfleet.common.runner.settings import RunnerSettings


def backoff_delay(
    num_delivered: int,
    *,
    initial: float,
    maximum: float,
    jitter: float = 0.0,
    rand: float | None = None,
) -> float:
    """Delay before the next delivery after delivery number `num_delivered` (1-based) failed.

    initial, 2*initial, 4*initial, ... capped at `maximum`, plus up to `jitter` of itself
    (`rand` in [0, 1) picks how much; random when not given).
    """
    exponent = max(num_delivered, 1) - 1
    base = maximum if exponent >= 64 else min(maximum, initial * (2**exponent))
    share = random.random() if rand is None else rand
    return base * (1.0 + jitter * share)


def redelivery_delay(settings: RunnerSettings, num_delivered: int) -> float:
    """The runner's delay before redelivering an intent whose delivery `num_delivered`
    hit a temporary error."""
    return backoff_delay(
        num_delivered,
        initial=settings.backoff_initial,
        maximum=settings.backoff_max,
        jitter=settings.backoff_jitter,
    )
