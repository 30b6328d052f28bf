"""`-pool-<name>` in the proxy username: connections ride only on the pool's members; an
unknown pool is a 400 naming the parameter, a pool with no member free a 503."""

from __future__ import annotations

import redis.asyncio as aioredis
from tests.api.helpers import PROVIDER
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, curl, raw_request, ready_proxy
from tests.health.conftest import ProxyProcess

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec
from proxyfleet.common.store import PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Withheld


async def test_a_pool_in_the_username_rides_only_on_its_members(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    gw_squids: list[ProxyProcess],
    target: TargetServer,
) -> None:
    pools = PoolStore(redis_client, SystemClock())
    await pools.apply("eu-west", PoolSpec(provider=PROVIDER, size=1), Owner.API)
    member = await ready_proxy(registry, gw_squids[0].port, pool="eu-west")
    plain = await ready_proxy(registry, gw_squids[1].port)
    gw = await start_gateway(cooldown=0.0)
    served: list[str] = []
    for _ in range(3):
        got = await curl(gw.url("c-pool-eu-west"), target.url, ca_file=target.ca_file)
        assert got.code == 0, got.stderr
        served += got.header("X-Proxyfleet-Proxy-Id")
    assert served == [member] * 3
    anywhere = await curl(gw.url("c"), target.url, ca_file=target.ca_file)
    assert anywhere.code == 0, anywhere.stderr
    assert set(anywhere.header("X-Proxyfleet-Proxy-Id")) <= {member, plain}

    authority = f"127.0.0.1:{target.port}"
    unknown = await raw_request(gw.port, connect_head(authority, username="c-pool-nope"))
    assert unknown.status == 400
    assert "username pool" in (unknown.header("Proxy-Status") or "")
    assert b"unknown pool 'nope'" in await unknown.reader.read()
    unknown.close()

    assert await pools.withhold(member, Withheld.QUARANTINED, "tests")
    empty = await raw_request(gw.port, connect_head(authority, username="c-pool-eu-west"))
    assert empty.status == 503
    assert empty.header("Retry-After")
    empty.close()
