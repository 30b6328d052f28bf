"""Two replicas of one GCP provider (two adapters on one fake GCE): one sweeps the empty
fleet while the other is in the middle of a create. Each interleaving is forced with the
fake's `hold`; at the end the new VM has its firewall rule, and the rule still goes once
no VM of the provider is left."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from tests.contract.provider_contract import new_proxy_id
from tests.gcp.fake_gce import FakeGce
from tests.gcp.fake_gce.server import Hold
from tests.gcp.gcp_provider import instances_of, provider_for, spec_for, widen_by_hand

from proxyfleet.provisioner_gcp.adapter import GcpProvider

INSTALLATION = "replicas"


@pytest.fixture
async def replicas(fake_gce: FakeGce) -> AsyncIterator[tuple[GcpProvider, GcpProvider]]:
    """(sweeper, creator): the creator has made and deleted one proxy, so the rule exists
    (checked and cached by the creator) and no VM is left; the sweeper never created."""
    sweeper = provider_for(fake_gce, INSTALLATION, sweep_min_age=0.001)
    creator = provider_for(fake_gce, INSTALLATION)
    first = spec_for(new_proxy_id(), INSTALLATION)
    await creator.create(first)
    await creator.delete(first.proxy_id, "")
    assert len(fake_gce.firewalls()) == 1
    assert fake_gce.instances() == []
    yield sweeper, creator
    await sweeper.close()
    await creator.close()


async def _reached(hold: Hold) -> None:
    assert await asyncio.to_thread(hold.wait_reached), "the held call never came"


def _has_its_rule(fake: FakeGce, proxy_id: str) -> bool:
    [vm] = instances_of(fake, proxy_id)
    tags = set(vm["resource"]["tags"]["items"])
    return any(set(f["targetTags"]) <= tags for f in fake.firewalls())


async def _swept_once_empty(fake: FakeGce, sweeper: GcpProvider, creator: GcpProvider) -> None:
    for vm in fake.instances():
        await creator.delete(vm["labels"]["proxyfleet-proxy"], "")
    await sweeper.sweeper.sweep(await sweeper.instances())
    assert fake.firewalls() == []


async def test_a_create_that_lands_after_gcs_listing_keeps_the_rule(
    fake_gce: FakeGce, replicas: tuple[GcpProvider, GcpProvider]
) -> None:
    sweeper, creator = replicas
    hold = fake_gce.hold("disks.aggregatedList")  # the sweep, past GC's empty listing
    sweep = asyncio.create_task(sweeper.list_managed())
    await _reached(hold)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    await creator.create(spec)
    hold.release()
    await sweep
    assert _has_its_rule(fake_gce, spec.proxy_id)
    assert fake_gce.calls.get("firewalls.delete", 0) == 0  # the rule was never away
    await _swept_once_empty(fake_gce, sweeper, creator)


async def test_an_insert_not_listed_yet_puts_back_the_rule_swept_meanwhile(
    fake_gce: FakeGce, replicas: tuple[GcpProvider, GcpProvider]
) -> None:
    sweeper, creator = replicas
    hold = fake_gce.hold("instances.insert")  # on its way: Compute lists no VM yet
    spec = spec_for(new_proxy_id(), INSTALLATION)
    create = asyncio.create_task(creator.create(spec))
    await _reached(hold)
    await sweeper.list_managed()
    assert fake_gce.firewalls() == []  # nothing listed, so the sweep took the rule
    hold.release()
    await create
    assert _has_its_rule(fake_gce, spec.proxy_id)
    await _swept_once_empty(fake_gce, sweeper, creator)


async def test_a_create_that_lands_during_the_rules_delete_gets_it_back(
    fake_gce: FakeGce, replicas: tuple[GcpProvider, GcpProvider]
) -> None:
    sweeper, creator = replicas
    hold = fake_gce.hold("firewalls.delete")  # the sweep listed no VM and is deleting
    sweep = asyncio.create_task(sweeper.list_managed())
    await _reached(hold)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    await creator.create(spec)  # its own check after the insert still sees the rule
    hold.release()
    await sweep
    assert _has_its_rule(fake_gce, spec.proxy_id)
    await _swept_once_empty(fake_gce, sweeper, creator)


async def test_a_failed_put_back_is_mended_by_the_next_sweep(
    fake_gce: FakeGce, replicas: tuple[GcpProvider, GcpProvider]
) -> None:
    sweeper, creator = replicas
    hold = fake_gce.hold("firewalls.delete")
    sweep = asyncio.create_task(sweeper.list_managed())
    await _reached(hold)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    await creator.create(spec)
    fake_gce.inject("firewalls.insert", "UNAVAILABLE")  # the put-back fails
    hold.release()
    await sweep  # a failed sweep is logged, never raised to GC
    assert fake_gce.firewalls() == []
    await sweeper.sweeper.sweep(await sweeper.instances())
    assert _has_its_rule(fake_gce, spec.proxy_id)
    await _swept_once_empty(fake_gce, sweeper, creator)


async def test_two_replicas_putting_the_rule_back_at_once_make_one(fake_gce: FakeGce) -> None:
    late = provider_for(fake_gce, INSTALLATION)
    early = provider_for(fake_gce, INSTALLATION)
    try:
        hold = fake_gce.hold("firewalls.insert")  # `late` found no rule; its insert waits
        mending = asyncio.create_task(late.firewall.verify())
        await _reached(hold)
        await early.firewall.verify()
        hold.release()
        await mending  # `alreadyExists`: made meanwhile, not a failure
        assert [f["name"] for f in fake_gce.firewalls()] == [late.firewall.rule.name]
    finally:
        await late.close()
        await early.close()


async def test_a_correction_that_finds_the_rule_swept_makes_it_again(
    fake_gce: FakeGce, replicas: tuple[GcpProvider, GcpProvider]
) -> None:
    sweeper, creator = replicas
    await widen_by_hand(fake_gce)
    hold = fake_gce.hold("firewalls.patch")  # the creator's correction, on its way
    mending = asyncio.create_task(creator.firewall.verify())
    await _reached(hold)
    await sweeper.list_managed()
    assert fake_gce.firewalls() == []  # no VM: the sweep took the rule
    hold.release()
    await mending  # its patch finds no rule (a 404): the rule is made again
    [rule] = fake_gce.firewalls()
    assert rule["sourceRanges"] == ["127.0.0.0/8"]
