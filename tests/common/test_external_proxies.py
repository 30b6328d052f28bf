"""The store's rules for an external proxy (one a static provider's source lists): it keeps
its scheme, a move to failed queues no delete, and only it comes back from failed."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Scheme


async def _delete_intents(redis_client: aioredis.Redis) -> list[str]:
    rows: Any = await redis_client.xrange("pf:outbox")
    return [fields["d"] for _, fields in rows if fields["s"].endswith(".delete")]


async def test_a_failed_external_proxy_is_kept_and_may_serve_again(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    proxy = make_proxy("p1", clock, external=True, scheme=Scheme.SOCKS5H, password="p@ss:w")
    await make_ready(registry, proxy)
    await registry.transition("p1", Phase.FAILED, reason="proxy unreachable")
    assert await _delete_intents(redis_client) == []

    await registry.transition("p1", Phase.READY)
    back = await registry.get("p1")
    assert back is not None
    assert (back.phase, back.scheme, back.external) == (Phase.READY, Scheme.SOCKS5H, True)
    assert back.url() == "socks5h://u:p%40ss%3Aw@127.0.0.1:3128"


async def test_a_failed_managed_proxy_is_deleted_and_never_serves_again(
    registry: ProxyRegistry, clock: ManualClock, redis_client: aioredis.Redis
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await registry.transition("p1", Phase.FAILED, reason="proxy unreachable")
    assert len(await _delete_intents(redis_client)) == 1
    with pytest.raises(Conflict, match="cannot move to ready"):
        await registry.transition("p1", Phase.READY)
    got = await registry.get("p1")
    assert got is not None
    assert (got.phase, got.scheme, got.external) == (Phase.FAILED, Scheme.HTTP, False)
