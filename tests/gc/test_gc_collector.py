"""The collector against real NATS (JetStream) and Redis, with a fake provisioner answering
the resources request on `local`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from prometheus_client import REGISTRY

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.ids import new_proxy_id, resource_name
from proxyfleet.common.messaging.jetstream import Publisher, intent_decoder
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.common.wire.models import DeleteIntent, ManagedResource, Phase, Proxy, ResourceList
from proxyfleet.gc.collector import STARTUP_GRACE, Collector
from proxyfleet.gc.report import ProviderRound, RoundReport, SkipCause
from proxyfleet.gc.settings import GcSettings

PROVIDER = "local"
ME = "inst-gc"
MIN_AGE = 300.0
Answer = Callable[[ResourceList | bytes | None], None]
PullSub = JetStreamContext.PullSubscription


class RecordingLog:
    """Stands in for the structlog logger: keeps (level, event, fields) per line."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []
        self.logged = asyncio.Event()

    def _add(self, level: str, event: str, kw: dict[str, Any]) -> None:
        self.lines.append((level, event, kw))
        self.logged.set()

    def debug(self, event: str, **kw: Any) -> None:
        self._add("debug", event, kw)

    def info(self, event: str, **kw: Any) -> None:
        self._add("info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._add("warning", event, kw)

    def error(self, event: str, **kw: Any) -> None:
        self._add("error", event, kw)

    def exception(self, event: str, **kw: Any) -> None:
        self._add("exception", event, kw)

    def events(self, name: str) -> list[dict[str, Any]]:
        return [kw for _, event, kw in self.lines if event == name]


def collector(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    log: RecordingLog,
    *,
    providers: tuple[str, ...] = (PROVIDER,),
    dry_run: bool = False,
    interval: float = 30.0,
    max_deletions: int = 100,
    max_delete_share: float = 1.0,
    replica: str = "gc-test",
    request_timeout: float = 0.3,
    round_lock_ttl: float = 0.0,
) -> Collector:
    """A collector; those made with the same `replica` (by default, all of a test's) are
    one replica on the round locks."""
    settings = GcSettings(
        min_age=MIN_AGE,
        dry_run=dry_run,
        request_timeout=request_timeout,
        interval=interval,
        round_lock_ttl=round_lock_ttl,
        max_deletions=max_deletions,
        max_delete_share=max_delete_share,
    )
    return Collector(
        nc=nc,
        registry=registry,
        publisher=Publisher(nc, clock),
        providers=providers,
        installation_id=ME,
        settings=settings,
        clock=clock,
        log=log,
        replica=replica,
    )


def resource(
    clock: ManualClock, proxy_id: str, age: float, installation: str = ME
) -> ManagedResource:
    return ManagedResource(
        resource_id=resource_name(proxy_id),
        proxy_id=proxy_id,
        installation_id=installation,
        created_at=clock.now() - age,
    )


async def add_proxy(
    registry: ProxyRegistry, clock: ManualClock, proxy_id: str, phase: Phase
) -> None:
    await registry.create(
        Proxy(
            id=proxy_id,
            provider=PROVIDER,
            zone="z1",
            phase=phase,
            gen=1,
            username="u",
            password="pw",
            created_at=clock.now() - 3600,
            updated_at=clock.now() - 3600,
        )
    )


async def pending(psub: PullSub) -> int:
    """Intents published and not yet read (exact right after run_once: publish awaits its ack)."""
    return (await psub.consumer_info()).num_pending or 0


async def read(psub: PullSub, n: int) -> list[tuple[DeleteIntent, str]]:
    out: list[tuple[DeleteIntent, str]] = []
    for msg in await psub.fetch(n, timeout=2):
        await msg.ack()
        intent = intent_decoder.decode(msg.data)
        assert isinstance(intent, DeleteIntent)
        out.append((intent, (msg.headers or {}).get("Nats-Msg-Id", "")))
    return out


@pytest.fixture(autouse=True)
async def marked(registry: ProxyRegistry, clock: ManualClock) -> None:
    """The registry's installation marker, a day old: every planted resource is younger
    (made after it), so an absent proxy's resource is an orphan, as in normal operation."""
    clock.advance(-86_400)
    await registry.installation.mark(ME)
    clock.advance(86_400)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("state", "age", "installation", "reason"),
    [
        (None, 600.0, ME, "gc: proxy absent"),
        (Phase.DELETED, 600.0, ME, "gc: proxy deleted"),
        (Phase.FAILED, 600.0, ME, "gc: proxy failed"),
        (None, 60.0, ME, None),
        (None, 600.0, "inst-other", None),
        (Phase.READY, 600.0, ME, None),
    ],
    ids=["orphan", "deleted", "failed", "younger", "other-installation", "live-proxy"],
)
async def test_one_resource_round(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
    state: Phase | None,
    age: float,
    installation: str,
    reason: str | None,
) -> None:
    pid = new_proxy_id()
    if state is not None:
        await add_proxy(registry, clock, pid, state)
    res = resource(clock, pid, age, installation)
    answer(ResourceList(provider=PROVIDER, resources=[res]))
    before = metric(
        "proxyfleet_gc_deletions_total",
        provider=PROVIDER,
        reason=(state or "absent"),
        dry_run="false",
    )

    report = await collector(nc, registry, clock, RecordingLog()).run_once()

    assert report.result == "ok"
    if reason is None:
        assert report.deletions == []
        assert await pending(delete_intents) == 0
        return
    [(intent, msg_id)] = await read(delete_intents, 1)
    assert intent == DeleteIntent(proxy_id=pid, resource_id=res.resource_id, reason=reason)
    assert msg_id == f"gc:{res.resource_id}"
    after = metric(
        "proxyfleet_gc_deletions_total",
        provider=PROVIDER,
        reason=(state or "absent"),
        dry_run="false",
    )
    assert after == before + 1


async def test_deletions_per_round_are_capped_oldest_first(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
) -> None:
    ids = [new_proxy_id() for _ in range(5)]
    ages = [600.0, 900.0, 700.0, 1200.0, 800.0]
    answer(
        ResourceList(
            provider=PROVIDER,
            resources=[resource(clock, pid, age) for pid, age in zip(ids, ages, strict=True)],
        )
    )
    log = RecordingLog()
    capped_before = metric("proxyfleet_gc_capped_total", provider=PROVIDER)

    report = await collector(nc, registry, clock, log, max_deletions=2).run_once()

    assert sorted(d.resource.proxy_id for d in report.deletions) == sorted([ids[3], ids[1]])
    assert len(await read(delete_intents, 5)) == 2
    assert log.events("gc.capped") == [{"provider": PROVIDER, "orphans": 5, "max_deletions": 2}]
    assert metric("proxyfleet_gc_capped_total", provider=PROVIDER) == capped_before + 1


async def test_dry_run_reports_and_publishes_nothing(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
) -> None:
    orphans = [new_proxy_id(), new_proxy_id()]
    live = new_proxy_id()
    await add_proxy(registry, clock, live, Phase.READY)
    answer(
        ResourceList(
            provider=PROVIDER,
            resources=[resource(clock, p, 600) for p in [*orphans, live]],
        )
    )
    before = metric(
        "proxyfleet_gc_deletions_total", provider=PROVIDER, reason="absent", dry_run="true"
    )
    log = RecordingLog()

    report = await collector(nc, registry, clock, log, dry_run=True).run_once()

    assert [d.resource.proxy_id for d in report.deletions] == orphans
    assert await pending(delete_intents) == 0
    lines = log.events("gc.would_delete")
    assert [(line["proxy_id"], line["resource_id"]) for line in lines] == [
        (p, resource_name(p)) for p in orphans
    ]
    assert all(line["why"] == "proxy absent" and line["provider"] == PROVIDER for line in lines)
    after = metric(
        "proxyfleet_gc_deletions_total", provider=PROVIDER, reason="absent", dry_run="true"
    )
    assert after == before + 2


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (None, "no_answer"),
        (ResourceList(provider=PROVIDER, resources=[], error="libvirt: host down"), "error_answer"),
        (b"not json", "bad_answer"),
        (ResourceList(provider="someone-else", resources=[]), "bad_answer"),
    ],
    ids=["silent", "error-answer", "garbage", "wrong-provider"],
)
async def test_a_provider_that_does_not_answer_properly_is_skipped(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
    reply: ResourceList | bytes | None,
    cause: str,
) -> None:
    if isinstance(reply, ResourceList):  # an orphan alongside the error: still never deleted
        reply.resources.append(resource(clock, new_proxy_id(), 600))
    answer(reply)
    before = metric("proxyfleet_gc_provider_skips_total", provider=PROVIDER, cause=cause)
    runs = metric("proxyfleet_gc_runs_total", result="failed")
    log = RecordingLog()

    report = await collector(nc, registry, clock, log).run_once()

    assert report.result == "failed"
    assert report.providers[0].skipped == cause
    assert await pending(delete_intents) == 0
    assert log.events("gc.provider_skipped")[0]["provider"] == PROVIDER
    assert (
        metric("proxyfleet_gc_provider_skips_total", provider=PROVIDER, cause=cause) == before + 1
    )
    assert metric("proxyfleet_gc_runs_total", result="failed") == runs + 1


async def test_no_provisioner_at_all_skips_only_that_provider(
    nc: NatsClient,
    registry: ProxyRegistry,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
) -> None:
    orphan = resource(clock, new_proxy_id(), 600)
    answer(ResourceList(provider=PROVIDER, resources=[orphan]))

    gc = collector(nc, registry, clock, RecordingLog(), providers=("nobody", PROVIDER))
    report = await gc.run_once()

    assert report.result == "partial"
    assert [(p.provider, p.skipped) for p in report.providers] == [
        ("nobody", "no_answer"),
        (PROVIDER, None),
    ]
    [(intent, _)] = await read(delete_intents, 1)
    assert intent.resource_id == orphan.resource_id
    assert metric("proxyfleet_gc_last_run_timestamp_seconds") == clock.now()


async def test_no_answer_is_info_until_the_provider_answered_or_the_grace_passed(
    nc: NatsClient, registry: ProxyRegistry, clock: ManualClock, answer: Answer
) -> None:
    """A GC started before its provisioners logs their silence at info; a warning once the
    provider answered and then stopped, or once STARTUP_GRACE has passed."""
    log = RecordingLog()
    gc = collector(nc, registry, clock, log, providers=("nobody", PROVIDER))

    def skip_levels() -> dict[str, str]:
        levels = {kw["provider"]: lvl for lvl, e, kw in log.lines if e == "gc.provider_skipped"}
        log.lines.clear()
        return levels

    await gc.run_once()  # neither answers (PROVIDER's fake is silent: a timeout)
    assert skip_levels() == {"nobody": "info", PROVIDER: "info"}
    answer(ResourceList(provider=PROVIDER, resources=[]))
    await gc.run_once()
    assert skip_levels() == {"nobody": "info"}
    answer(None)  # PROVIDER answered once, then stopped
    await gc.run_once()
    assert skip_levels() == {"nobody": "info", PROVIDER: "warning"}
    clock.advance(STARTUP_GRACE)
    await gc.run_once()
    assert skip_levels() == {"nobody": "warning", PROVIDER: "warning"}


async def test_registry_failure_skips_the_provider_and_deletes_nothing(
    nc: NatsClient,
    clock: ManualClock,
    answer: Answer,
    delete_intents: PullSub,
) -> None:
    dead = ProxyRegistry(connect_redis("redis://127.0.0.1:1/0"), clock)  # nothing listens
    answer(ResourceList(provider=PROVIDER, resources=[resource(clock, new_proxy_id(), 600)]))
    log = RecordingLog()

    report = await collector(nc, dead, clock, log).run_once()

    assert report.providers[0].skipped == "error"
    assert await pending(delete_intents) == 0
    assert log.events("gc.provider_failed")


async def test_run_forever_rounds_until_stopped(
    nc: NatsClient, registry: ProxyRegistry, clock: ManualClock, answer: Answer
) -> None:
    answer(ResourceList(provider=PROVIDER, resources=[]))
    log = RecordingLog()
    stop = asyncio.Event()
    task = asyncio.create_task(collector(nc, registry, clock, log, interval=0.05).run_forever(stop))
    async with asyncio.timeout(5):
        while len(log.events("gc.round")) < 2:
            log.logged.clear()
            await log.logged.wait()
        stop.set()
        await task
    assert all(r["result"] == "ok" for r in log.events("gc.round"))


def test_round_report_result() -> None:
    def result(*skips: SkipCause | None) -> str:
        rounds = [ProviderRound(f"p{i}", skipped=s) for i, s in enumerate(skips)]
        return RoundReport(providers=rounds, dry_run=False).result

    assert (result(), result(None, None), result(None, "error"), result("no_answer")) == (
        "ok",
        "ok",
        "partial",
        "failed",
    )
