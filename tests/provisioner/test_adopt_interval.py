"""The adopter checks the installation marker every pass but lists the provider's
resources (a call per VM on some providers) only every `adopt_interval`, and at every
pass while the marker is young: right after a store reset every adopter heals at once,
whichever of them wrote the new marker. Real Redis, a real local provider's listing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.runner import Adopter
from proxyfleet.common.runner.keyed import KeyedLocks
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import ManagedResource, Phase
from proxyfleet.provisioner_local.adapter import LocalProvider
from proxyfleet.provisioner_local.options import LocalOptions

from .helpers import INSTALLATION, fast_settings

PROVIDER = "adopt-interval"


class CountedListings(LocalProvider):
    """The local provider, counting how often it is listed."""

    listings = 0

    async def list_managed(self) -> list[ManagedResource]:
        self.listings += 1
        return await super().list_managed()


def _adopter(
    redis_client: aioredis.Redis, clock: ManualClock, state: Path, **settings: object
) -> tuple[Adopter, CountedListings]:
    provider = CountedListings(
        LocalOptions(state_dir=state, installation_id=INSTALLATION, connect_ports=[443])
    )
    adopter = Adopter(
        registry=ProxyRegistry(redis_client, clock),
        provider=provider,
        settings=fast_settings(PROVIDER, adopt_interval=60.0, **settings),
        installation_id=INSTALLATION,
        clock=clock,
    )
    return adopter, provider


async def test_the_provider_is_listed_when_due_or_while_the_marker_is_young(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    clock = ManualClock(time.time())
    adopter, provider = _adopter(redis_client, clock, tmp_path)
    assert await adopter.adopt_once(list_due=False) == 0  # it wrote the marker: young
    clock.advance(30)
    assert await adopter.adopt_once(list_due=False) == 0  # still younger than 60 s
    assert provider.listings == 2
    clock.advance(31)
    assert await adopter.adopt_once(list_due=False) is None  # old, and not due: no call
    assert provider.listings == 2
    assert await adopter.adopt_once(list_due=True) == 0
    assert provider.listings == 3

    await redis_client.flushdb()  # a reset: the next pass writes a new marker and lists
    assert await adopter.adopt_once(list_due=False) == 0
    assert provider.listings == 4


async def test_the_loop_lists_once_per_adopt_interval(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    clock = ManualClock(time.time())
    adopter, provider = _adopter(redis_client, clock, tmp_path, reconcile_interval=0.02)
    await adopter.adopt_once()
    clock.advance(120)  # an old marker
    provider.listings = 0
    stop = asyncio.Event()
    loop = asyncio.create_task(adopter.run(stop))
    try:
        deadline = time.monotonic() + 5
        while provider.listings < 1:  # the first pass lists
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # about 15 more passes of the marker check
        assert provider.listings == 1
        clock.advance(60)
        while provider.listings < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 5)


class OneSurvivor(LocalProvider):
    """The local provider, listing one resource made before any marker."""

    resource = ManagedResource(
        resource_id="pf-p-survivor",
        proxy_id="p-survivor",
        installation_id=INSTALLATION,
        created_at=time.time() - 60,
        zone="local-a",
        host="127.0.0.1",
        port=3128,
        username="u",
        password="pw",
    )

    async def list_managed(self) -> list[ManagedResource]:
        return [self.resource]


async def test_a_resource_whose_intent_is_in_hand_is_left_alone_until_it_is_done(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    clock = ManualClock(time.time())
    in_hand = KeyedLocks()
    registry = ProxyRegistry(redis_client, clock)
    adopter = Adopter(
        registry=registry,
        provider=OneSurvivor(
            LocalOptions(state_dir=tmp_path, installation_id=INSTALLATION, connect_ports=[443])
        ),
        settings=fast_settings(PROVIDER),
        installation_id=INSTALLATION,
        clock=clock,
        in_hand=in_hand,
    )
    survivor = OneSurvivor.resource.proxy_id
    async with in_hand.hold(survivor):  # a create that lost its entry, deleting its resource
        assert await adopter.adopt_once() == 0
    assert await registry.get(survivor) is None
    assert await adopter.adopt_once() == 1  # still listed once the intent is done: a survivor
    adopted = await registry.get(survivor)
    assert adopted is not None
    assert adopted.phase is Phase.BOOTING
