"""Several GC replicas on one NATS and Redis: one replica runs each provider's rounds (its
round lock), the others skip them; a stopping replica hands over at once; a round whose
lock was lost before its deletes sends none. Real NATS and Redis, a fake provisioner."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from tests.gc.test_gc_collector import (
    PROVIDER,
    Answer,
    RecordingLog,
    collector,
    marked,  # noqa: F401  (autouse: the installation marker, a day old)
    metric,
    resource,
)

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.ids import new_proxy_id, resource_name
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ResourceList
from proxyfleet.gc.report import ProviderRound, RoundReport
from proxyfleet.gc.settings import GcSettings

PullSub = JetStreamContext.PullSubscription
LOCK = f"gc:{PROVIDER}"


def skipped(reason: str) -> float:
    return metric("proxyfleet_gc_rounds_skipped_total", provider=PROVIDER, reason=reason)


async def sent_intents(nc: NatsClient) -> tuple[list[str], asyncio.Event]:
    """Every delete intent published on `local` (a core subscription sees each publish,
    those JetStream then drops as duplicates too), by its Nats-Msg-Id."""
    sent: list[str] = []
    arrived = asyncio.Event()

    async def on_intent(msg: Msg) -> None:
        sent.append((msg.headers or {}).get("Nats-Msg-Id", ""))
        arrived.set()

    await nc.subscribe(subjects.intent_delete(PROVIDER), cb=on_intent)
    await nc.flush()
    return sent, arrived


async def wait_for_count(sent: list[str], arrived: asyncio.Event, n: int) -> None:
    async with asyncio.timeout(5):
        while len(sent) < n:
            arrived.clear()
            await arrived.wait()


async def test_two_replicas_send_each_orphan_s_delete_once_per_round(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
) -> None:
    orphans = [new_proxy_id() for _ in range(3)]
    answer(ResourceList(provider=PROVIDER, resources=[resource(clock, p, 600) for p in orphans]))
    sent, arrived = await sent_intents(nc)
    logs = {"gc-a": RecordingLog(), "gc-b": RecordingLog()}
    replicas = {
        name: collector(nc, registry, clock, log, replica=name) for name, log in logs.items()
    }
    held_before = skipped("held")
    leaders = []

    for n in range(1, 4):  # each round of both at once: they contend for the lock each time
        both = await asyncio.gather(*(c.run_once() for c in replicas.values()))
        reports = dict(zip(replicas, both, strict=True))
        await wait_for_count(sent, arrived, 3 * n)
        await nc.flush()
        assert len(sent) == 3 * n  # not 6: the other replica sent nothing
        [leader] = [name for name, r in reports.items() if r.result == "ok"]
        [standby] = [name for name, r in reports.items() if r.result == "held"]
        leaders.append(leader)
        assert sorted(d.resource.proxy_id for d in reports[leader].deletions) == sorted(orphans)
        assert reports[standby].providers == [ProviderRound(PROVIDER, held_by=leader)]
        assert replicas[leader].leads == {PROVIDER}
        assert replicas[standby].leads == frozenset()

    assert sorted(sent) == sorted(f"gc:{resource_name(p)}" for p in orphans for _ in range(3))
    assert len(set(leaders)) == 1  # the lock stays with the replica that runs the rounds
    assert skipped("held") == held_before + 3
    standby_log = logs[standby]
    assert [lvl for lvl, e, _ in standby_log.lines if e == "gc.provider_held"] == ["debug"] * 3
    assert [lvl for lvl, e, _ in standby_log.lines if e == "gc.round"] == ["debug"] * 3
    assert not standby_log.events("gc.delete_requested")
    assert len(logs[leader].events("gc.round")) == 3
    assert (await delete_intents.consumer_info()).num_pending == 3


async def test_a_stopping_replica_hands_its_rounds_over_at_once(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
) -> None:
    """run_forever releases the locks when it stops: the other replica runs the next round
    at once, not after the ttl (60.6 s here)."""
    answer(ResourceList(provider=PROVIDER, resources=[resource(clock, new_proxy_id(), 600)]))
    log = RecordingLog()
    first = collector(nc, registry, clock, log, replica="gc-a", interval=0.05)
    second = collector(nc, registry, clock, RecordingLog(), replica="gc-b")
    stop = asyncio.Event()
    task = asyncio.create_task(first.run_forever(stop))
    async with asyncio.timeout(5):
        while not log.events("gc.round"):
            log.logged.clear()
            await log.logged.wait()
    assert (await second.run_once()).result == "held"

    stop.set()
    await task

    assert await registry.locks.holder(LOCK) == ""
    report = await second.run_once()
    assert report.result == "ok"
    assert len(report.deletions) == 1


async def test_a_killed_replica_s_lock_expires_and_another_takes_over(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
) -> None:
    """A replica that dies mid-way (its task cancelled: no release) keeps the lock until
    its ttl passes; the other's rounds are held until then, and it runs the next one after."""
    answer(ResourceList(provider=PROVIDER, resources=[resource(clock, new_proxy_id(), 600)]))
    ttl, interval = 0.6, 0.05
    log = RecordingLog()
    first, second = (
        collector(nc, registry, clock, lg, replica=name, interval=interval, round_lock_ttl=ttl)
        for name, lg in (("gc-a", log), ("gc-b", RecordingLog()))
    )
    task = asyncio.create_task(first.run_forever(asyncio.Event()))
    async with asyncio.timeout(5):
        while not log.events("gc.round"):
            log.logged.clear()
            await log.logged.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    killed = asyncio.get_running_loop().time()
    assert await registry.locks.holder(LOCK) == "gc-a"

    results: list[str] = []
    async with asyncio.timeout(5):
        while not results or results[-1] != "ok":
            results.append((await second.run_once()).result)
            await asyncio.sleep(interval)
    took = asyncio.get_running_loop().time() - killed

    assert results[0] == "held"
    assert set(results[:-1]) == {"held"}
    assert took < ttl + interval + 0.5  # 0.5: the rounds' own time on a busy machine
    assert await registry.locks.holder(LOCK) == "gc-b"


@pytest.mark.parametrize("then", ["expired", "taken"])
async def test_a_round_that_lost_its_lock_sends_no_delete(
    nc: NatsClient,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    clock: ManualClock,
    delete_intents: PullSub,
    then: str,
) -> None:
    """The lock goes while the provider answers (as if this replica paused past the ttl):
    the listing is stale, so nothing from it is deleted; an expired lock is not taken back."""
    orphans = [resource(clock, new_proxy_id(), 600) for _ in range(2)]

    async def respond(msg: Msg) -> None:
        await redis_client.delete(registry.locks.key(LOCK))
        if then == "taken":
            await registry.locks.acquire([LOCK], "gc-other", 30)
        await msg.respond(msgspec.json.encode(ResourceList(provider=PROVIDER, resources=orphans)))

    sub = await nc.subscribe(subjects.resources_request(PROVIDER), cb=respond)
    log = RecordingLog()
    lost_before = skipped("lost")
    gc = collector(nc, registry, clock, log, replica="gc-a")
    try:
        report = await gc.run_once()
    finally:
        await sub.unsubscribe()

    assert report.providers[0].lost
    assert report.deletions == []
    assert report.result == "failed"
    assert (await delete_intents.consumer_info()).num_pending == 0
    assert log.events("gc.lock_lost") == [{"provider": PROVIDER, "sent": 0, "not_sent": 2}]
    assert skipped("lost") == lost_before + 1
    assert gc.leads == frozenset()
    assert await registry.locks.holder(LOCK) == ("gc-other" if then == "taken" else "")


def test_round_report_result_with_held_rounds() -> None:
    def result(*rounds: ProviderRound) -> str:
        return RoundReport(providers=list(rounds), dry_run=False).result

    ok, held = ProviderRound("p1"), ProviderRound("p2", held_by="gc-b")
    lost, failed = ProviderRound("p3", lost=True), ProviderRound("p4", skipped="error")
    assert result(held) == "held"
    assert result(ok, held) == "ok"  # the held round is another replica's to run
    assert result(ok, lost) == "partial"
    assert result(held, failed) == "failed"


def test_round_lock_ttl_defaults_from_the_interval_and_must_outlast_it() -> None:
    assert GcSettings().lock_ttl == 65.0
    assert GcSettings(interval=10, request_timeout=2).lock_ttl == 22.0
    assert GcSettings(round_lock_ttl=40).lock_ttl == 40.0
    with pytest.raises(ConfigError, match="--round-lock-ttl"):
        GcSettings(round_lock_ttl=35)  # not above 30 + 5
    with pytest.raises(ConfigError, match="--round-lock-ttl"):
        GcSettings(round_lock_ttl=-1)
