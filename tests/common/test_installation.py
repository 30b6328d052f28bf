"""The registry's identity (installation marker, tombstones) and the adopt script, on a
real Redis."""

from __future__ import annotations

import msgspec
import pytest
import redis.asyncio as aioredis
from tests.common.factories import make_proxy, make_ready

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.domain.adoption import adopted_proxy
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.messaging.jetstream import event_decoder, intent_decoder
from proxyfleet.common.store import (
    GrantRequest,
    Installation,
    InstallationMarker,
    LeaseStore,
    PoolStore,
    ProxyRegistry,
)
from proxyfleet.common.store.outbox import Outbox, OutboxEntry
from proxyfleet.common.wire.models import CreateIntent, ManagedResource, Phase


async def _outbox(redis_client: aioredis.Redis) -> list[OutboxEntry]:
    return await Outbox(redis_client).peek()


def _resource(pid: str, clock: ManualClock, *, host: str = "127.0.0.1") -> ManagedResource:
    return ManagedResource(
        resource_id=f"pf-{pid}",
        proxy_id=pid,
        installation_id="inst-a",
        created_at=clock.now() - 3600,
        zone="zone-a",
        host=host,
        port=20001 if host else 3128,
        username="u",
        password="s3cret",
        labels={"tier": "gold"},
    )


async def test_the_marker_is_written_once(redis_client: aioredis.Redis, clock: ManualClock) -> None:
    first = Installation(redis_client, clock)
    assert await first.marker() is None

    made = await first.mark("inst-a")
    clock.advance(60)
    again = await Installation(redis_client, clock).mark("inst-b")  # another one: no overwrite

    assert (made.installation_id, made.created_at, made.created) == (
        "inst-a",
        clock.now() - 60,
        True,
    )
    assert (again.installation_id, again.created_at, again.created) == (
        "inst-a",
        made.created_at,
        False,
    )
    assert await first.marker() == InstallationMarker("inst-a", made.created_at)


async def test_a_deleted_proxy_leaves_a_tombstone_that_refuses_adoption(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    await make_ready(registry, make_proxy("p1", clock))
    await registry.transition("p1", Phase.DELETING)
    await registry.transition("p1", Phase.DELETED)
    assert await registry.installation.tombstoned(["p1", "p2"]) == {"p1"}
    await redis_client.delete("pf:proxy:p1")  # its entry expired (deleted_ttl)

    proxy = adopted_proxy("local", _resource("p1", clock), clock.now(), 60.0)
    assert await registry.adopt(proxy) is None
    assert await registry.get("p1") is None


async def test_adopt_with_an_address_boots_and_is_probed(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    proxy = adopted_proxy("local", _resource("p1", clock), clock.now(), 60.0)

    assert await registry.adopt(proxy) is True
    assert await registry.adopt(proxy) is False  # exists now

    back = await registry.get("p1")
    assert back is not None
    assert (back.phase, back.gen, back.host, back.port, back.resource_id) == (
        Phase.BOOTING,
        1,
        "127.0.0.1",
        20001,
        "pf-p1",
    )
    assert (back.username, back.password, back.labels) == ("u", "s3cret", {"tier": "gold"})
    assert back.boot_deadline == clock.now() + 60.0
    assert await redis_client.zscore("pf:probe", "p1") == clock.now()
    assert (await registry.count_by_phase("local"))[Phase.BOOTING] == 1
    [entry] = await _outbox(redis_client)
    event = event_decoder.decode(entry.body)
    assert (entry.subject, event.type, event.proxy_id, event.provider) == (
        "proxyfleet.events.proxy.adopted",
        "proxy.adopted",
        "p1",
        "local",
    )
    assert b"s3cret" not in entry.body
    assert [p.id for p in (await registry.page())[0]] == ["p1"]


async def test_adopt_without_an_address_queues_a_create_for_the_runner(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    proxy = adopted_proxy("kvm1", _resource("p2", clock, host=""), clock.now(), 60.0)

    assert await registry.adopt(proxy) is True

    back = await registry.get("p2")
    assert back is not None
    assert (back.phase, back.host, back.port) == (Phase.PROVISIONING, "", 0)
    assert await redis_client.zscore("pf:probe", "p2") is None
    intents = [
        intent_decoder.decode(e.body)
        for e in await _outbox(redis_client)
        if ".intents." in e.subject
    ]
    assert intents == [CreateIntent(proxy_id="p2")]


async def test_an_adopted_proxy_is_not_granted_before_its_hold_ends(
    registry: ProxyRegistry, leases: LeaseStore, clock: ManualClock
) -> None:
    """Its leases went with the store, but their holders may use it until they would have
    expired: a grant waits for the hold, even once a good probe made it ready."""
    proxy = adopted_proxy("local", _resource("p3", clock), clock.now(), 60.0)
    assert await registry.adopt(proxy, hold=120.0) is True
    await registry.transition("p3", Phase.READY, last_ok_at=clock.now())

    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=30))
    clock.advance(119)
    with pytest.raises(Unavailable):
        await leases.grant(GrantRequest(ttl=30))
    clock.advance(2)

    lease = await leases.grant(GrantRequest(ttl=30))
    assert lease.proxy_id == "p3"


async def test_an_adopted_member_rejoins_its_pool_by_its_label(
    registry: ProxyRegistry, redis_client: aioredis.Redis, clock: ManualClock
) -> None:
    res = _resource("p4", clock)
    member = msgspec.structs.replace(res, labels={**res.labels, POOL_LABEL: "eu"})
    assert await registry.adopt(adopted_proxy("local", member, clock.now(), 60.0)) is True
    assert await registry.adopt(adopted_proxy("local", _resource("p5", clock), clock.now(), 60))
    assert (await registry.get("p4") or pytest.fail("not adopted")).pool == "eu"
    assert (await registry.get("p5") or pytest.fail("not adopted")).pool == ""
    assert await PoolStore(redis_client, clock).members("eu") == ["p4"]
