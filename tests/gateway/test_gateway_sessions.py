"""Sticky sessions (`-session-<id>`): one lease per session, shared by its connections on
any replica, never by two sessions; a session ends with its sesstime."""

from __future__ import annotations

import asyncio

from tests.api.helpers import OTHER_CLIENT
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, curl, raw_request


async def _proxy_of(proxy_url: str, target: TargetServer) -> str:
    got = await curl(proxy_url, target.url, ca_file=target.ca_file)
    assert got.code == 0, got.stderr
    [proxy_id] = got.header("X-Proxyfleet-Proxy-Id")
    return proxy_id


async def test_a_session_sticks_to_one_proxy(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0)
    seen = {await _proxy_of(gw.url("c-session-abc"), target) for _ in range(4)}
    assert len(seen) == 1
    # and rotation still rotates beside it: never the session's proxy
    other = await _proxy_of(gw.url("c"), target)
    assert other not in seen


async def test_a_session_sticks_across_two_replicas(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    one, two = await start_gateway(cooldown=0.0), await start_gateway(cooldown=0.0)
    seen = []
    for gw in (one, two, one, two):
        seen.append(await _proxy_of(gw.url("c-session-s1-sesstime-5"), target))
    assert len(set(seen)) == 1


async def test_two_sessions_never_share_a_proxy(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    one, two = await start_gateway(cooldown=0.0), await start_gateway(cooldown=0.0)
    names = [f"c-session-n{i}" for i in range(len(fleet))]
    # every session at once, from both replicas: each gets a proxy of its own
    first = await asyncio.gather(
        *(_proxy_of((one if i % 2 else two).url(n), target) for i, n in enumerate(names))
    )
    assert len(set(first)) == len(fleet)
    again = await asyncio.gather(*(_proxy_of(one.url(n), target) for n in names))
    assert again == first
    # the pool is taken by the sessions: a new session waits (503)
    late = await raw_request(one.port, connect_head(f"127.0.0.1:{target.port}", "c-session-x"))
    assert late.status == 503
    late.close()


async def test_another_token_never_rides_a_session_of_the_same_name(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0)
    mine = await _proxy_of(gw.url("c-session-same"), target)
    theirs = await _proxy_of(gw.url("c-session-same", token=OTHER_CLIENT), target)
    assert mine != theirs


async def test_a_session_idle_past_its_timeout_gets_a_new_lease(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0, session_idle=0.5, sweep_interval=0.1)
    first = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}", "c-session-i"))
    assert first.status == 200
    first.close()
    await asyncio.sleep(1.0)
    second = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}", "c-session-i"))
    assert second.status == 200
    assert second.header("X-Proxyfleet-Lease-Id") != first.header("X-Proxyfleet-Lease-Id")
    second.close()
