"""A provider's retry-after hint (TemporaryProviderError.retry_after) stretches the NAK
delay of the redelivery: never shorter than the hint, never longer than the documented cap.

The pure delay function first, then the runner against real NATS and Redis with a fake
provider that asks for a wait."""

from __future__ import annotations

import math
import time

import pytest

from proxyfleet.common.core.errors import TemporaryProviderError
from proxyfleet.common.runner.backoff import MAX_RETRY_AFTER, hint_cap, redelivery_delay
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import ManagedResource, Phase, Provisioned, ProxySpec

from .conftest import RunnerFactory
from .helpers import add_pending_proxy, fast_settings, wait_for_phase

SETTINGS = fast_settings("p", backoff_initial=1.0, backoff_max=30.0, stale_after=120.0)


def test_without_a_hint_the_delay_is_the_backoff() -> None:
    assert [redelivery_delay(SETTINGS, n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]


@pytest.mark.parametrize(("hint", "expected"), [(0.5, 2.0), (2.0, 2.0), (7.5, 7.5)])
def test_the_delay_is_at_least_the_hint(hint: float, expected: float) -> None:
    assert redelivery_delay(SETTINGS, 2, hint) == expected


def test_a_hint_is_capped_below_stale_after_and_at_the_maximum() -> None:
    assert redelivery_delay(SETTINGS, 1, 3600.0) == 120.0 == hint_cap(SETTINGS)
    patient = fast_settings("p", stale_after=10_000.0)
    assert redelivery_delay(patient, 1, math.inf) == MAX_RETRY_AFTER


@pytest.mark.parametrize("hint", [None, 0.0, -5.0, math.nan])
def test_a_meaningless_hint_is_ignored(hint: float | None) -> None:
    assert redelivery_delay(SETTINGS, 3, hint) == 4.0


class RateLimitedProvider:
    """The first create is refused with a retry-after; the next one succeeds."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        self.create_calls: list[float] = []

    async def create(self, spec: ProxySpec) -> Provisioned:
        self.create_calls.append(time.monotonic())
        if len(self.create_calls) == 1:
            raise TemporaryProviderError("429 rate limited", retry_after=self.retry_after)
        return Provisioned(resource_id=f"res-{spec.proxy_id}", host="127.0.0.1", port=3128)

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        return None

    async def list_managed(self) -> list[ManagedResource]:
        return []

    async def close(self) -> None:
        return None


async def test_the_runner_waits_the_providers_retry_after_before_redelivering(
    provider_name: str,
    registry: ProxyRegistry,
    start_runner: RunnerFactory,
) -> None:
    fake = RateLimitedProvider(retry_after=1.0)
    # the backoff alone would redeliver after 0.05 s
    await start_runner(fake, fast_settings(provider_name, backoff_initial=0.05, backoff_max=0.2))
    proxy = await add_pending_proxy(registry, provider_name)  # its create intent goes out
    await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    first, second = fake.create_calls
    assert second - first >= 1.0 * 0.95  # the NAK delay was the hint, not the backoff
