"""Store fixtures (the registry and the clock are in tests/conftest.py)."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.store import LeaseStore
from proxyfleet.common.store.lease_terms import LeasePolicy


@pytest.fixture
def leases(redis_client: aioredis.Redis, clock: ManualClock) -> LeaseStore:
    return LeaseStore(redis_client, clock, LeasePolicy(cooldown=30, max_ttl=600, ban_seconds=100))
