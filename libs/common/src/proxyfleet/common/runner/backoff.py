"""Bounded exponential backoff between deliveries of one intent, stretched to a provider's
retry-after hint when it gives one. Pure."""

from __future__ import annotations

import math
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


MAX_RETRY_AFTER = 300.0
"""Longest redelivery delay a retry-after hint may ask for (seconds). A longer wait (a
daily quota) is not worth holding an intent for: the next delivery asks again."""


def hint_cap(settings: RunnerSettings) -> float:
    """Longest delay a hint may stretch a redelivery to: MAX_RETRY_AFTER, and below
    `stale_after`, past which the reconciler would publish the waiting intent again."""
    return min(MAX_RETRY_AFTER, settings.stale_after)


def redelivery_delay(
    settings: RunnerSettings, num_delivered: int, hint: float | None = None
) -> float:
    """The runner's delay before redelivering an intent whose delivery `num_delivered`
    hit a temporary error: the backoff, or the error's retry-after `hint` when that is
    longer (capped at `hint_cap`). A missing, zero, negative or NaN hint is no hint."""
    delay = backoff_delay(
        num_delivered,
        initial=settings.backoff_initial,
        maximum=settings.backoff_max,
        jitter=settings.backoff_jitter,
    )
    if hint is None or math.isnan(hint) or hint <= 0:
        return delay
    return max(delay, min(hint, hint_cap(settings)))
