"""A store reset never empties the fleet: GC keeps what survived a reset (made before the
registry's installation marker, never tombstoned) and refuses a round without a marker or
one that would delete too large a share. The plan is pure; the last test uses real
Redis and NATS."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from tests.gc.test_gc_collector import ME, PROVIDER, Answer, RecordingLog, collector, metric

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.ids import new_proxy_id, resource_name
from proxyfleet.common.domain.adoption import plan_adoptions
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import ManagedResource, Phase, Proxy, ResourceList
from proxyfleet.gc.plan import Refusal, Why, plan_deletions, refusal

NOW = 1_700_000_000.0
MARKER = NOW - 1000  # the registry began 1000 s ago (a reset then)


def made(proxy_id: str, age: float, **kw: str) -> ManagedResource:
    return ManagedResource(
        resource_id=f"pf-{proxy_id}",
        proxy_id=proxy_id,
        installation_id=ME,
        created_at=NOW - age,
        zone="z1",
        username=kw.get("username", "u"),
        password=kw.get("password", "pw"),
        host="127.0.0.1",
        port=20001,
    )


@pytest.mark.parametrize(
    ("age", "tombstoned", "deleted_because"),
    [
        (2000.0, False, None),  # made before the marker: survived the reset, kept
        (2000.0, True, Why.DELETED),  # made before, but deleted since: an orphan
        (500.0, False, Why.ABSENT),  # made after the marker, never registered: an orphan
        (500.0, True, Why.DELETED),
    ],
)
def test_an_absent_proxy_s_resource_by_age_against_the_marker(
    age: float, tombstoned: bool, deleted_because: Why | None
) -> None:
    res = made("p1", age)
    tombs = {"p1"} if tombstoned else set()

    plan = plan_deletions(ME, NOW, 300.0, [res], {"p1": None}, MARKER, tombs)

    assert [d.why for d in plan] == ([deleted_because] if deleted_because else [])
    adopt = plan_adoptions(ME, MARKER, [res], {"p1": None}, tombs)
    assert adopt == ([res] if deleted_because is None else [])


def test_adoption_needs_credentials_a_lookup_and_no_entry() -> None:
    old = 2000.0
    listed = [
        made("bare", old, password=""),  # made before resources carried credentials
        made("live", old),
        made("unlooked", old),
        made("ok", old),
        made("ok", old),  # listed twice: adopted once
    ]
    proxies: dict[str, Proxy | None] = {"bare": None, "ok": None, "live": _proxy("live")}

    assert [r.proxy_id for r in plan_adoptions(ME, MARKER, listed, proxies, set())] == ["ok"]


@pytest.mark.parametrize(
    ("marker", "planned", "listed", "share", "expected"),
    [
        (None, 1, 10, 0.5, Refusal.NO_MARKER),
        ("inst-other", 1, 10, 0.5, Refusal.FOREIGN_MARKER),
        (ME, 5, 10, 0.5, None),
        (ME, 6, 10, 0.5, Refusal.SHARE),
        (ME, 1, 1, 0.5, None),  # one deletion is always allowed
        (ME, 2, 2, 0.5, Refusal.SHARE),
        (ME, 37, 37, 1.0, None),  # 1.0 lifts the share limit
    ],
)
def test_refusal(
    marker: str | None, planned: int, listed: int, share: float, expected: Refusal | None
) -> None:
    assert refusal(ME, marker, planned, listed, share) is expected


def _proxy(pid: str) -> Proxy:
    return Proxy(
        id=pid,
        provider=PROVIDER,
        zone="z1",
        phase=Phase.READY,
        gen=1,
        username="u",
        password="pw",
        created_at=NOW,
        updated_at=NOW,
    )


async def test_a_reset_registry_deletes_nothing_and_says_why(
    nc: NatsClient,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    clock: ManualClock,
    answer: Answer,
    delete_intents: JetStreamContext.PullSubscription,
) -> None:
    """A flushed registry (no marker) refuses; once a writer marks it again, the resources
    made before are kept as survivors, while a share limit still stops a mass delete."""
    ids = [new_proxy_id() for _ in range(6)]
    resources = [
        ManagedResource(
            resource_id=resource_name(p),
            proxy_id=p,
            installation_id=ME,
            created_at=clock.now() - 3600,
        )
        for p in ids
    ]
    answer(ResourceList(provider=PROVIDER, resources=resources))
    await redis_client.flushdb()  # Redis restarted without persistence: no marker
    log = RecordingLog()
    before = metric("proxyfleet_gc_refusals_total", provider=PROVIDER, reason="no_marker")

    report = await collector(nc, registry, clock, log, max_delete_share=0.5).run_once()

    assert report.deletions == []
    assert report.providers[0].refused is Refusal.NO_MARKER
    assert report.result == "failed"
    assert metric("proxyfleet_gc_refusals_total", provider=PROVIDER, reason="no_marker") == (
        before + 1
    )
    assert [(e["reason"], e["would_delete"]) for e in log.events("gc.refused")] == [
        ("no_marker", 6)
    ]

    await registry.installation.mark(ME)  # a writer started again: the marker is now
    report = await collector(nc, registry, clock, RecordingLog()).run_once()
    assert report.deletions == []
    assert report.result == "ok"

    clock.advance(3600 * 2)  # later resources, made after the marker, never registered
    late = [new_proxy_id() for _ in range(4)]
    answer(
        ResourceList(
            provider=PROVIDER,
            resources=[
                *resources,
                *(
                    ManagedResource(
                        resource_id=resource_name(p),
                        proxy_id=p,
                        installation_id=ME,
                        created_at=clock.now() - 600,
                    )
                    for p in late
                ),
            ],
        )
    )
    log = RecordingLog()
    report = await collector(nc, registry, clock, log, max_delete_share=0.3).run_once()
    assert report.deletions == []  # 4 of 10 > 0.3
    assert [e["reason"] for e in log.events("gc.refused")] == ["share"]
    report = await collector(nc, registry, clock, RecordingLog(), max_delete_share=0.5).run_once()
    assert sorted(d.resource.proxy_id for d in report.deletions) == sorted(late)
    assert (await delete_intents.consumer_info()).num_pending == len(late)
