"""The API on a three-server NATS cluster, its streams with three replicas: kill -9 the
event stream's leader while events flow, or stop two servers of three (no quorum), and
every outbox entry still reaches its stream once, in the end; grants never wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import nats.errors
import pytest
from nats.aio.client import Client as NatsClient
from tests.api.helpers import ready_proxy
from tests.messaging.conftest import REPLICAS, ClusterApi
from tests.messaging.load import Load
from tests.messaging.streams import (
    STREAMS,
    LengthWatch,
    OutboxTap,
    assert_each_once,
    stream_leader,
    until,
)

from proxyfleet.common.messaging.jetstream import connect_nats
from proxyfleet.common.store.outbox import Outbox
from proxyfleet.common.wire import subjects
from proxyfleet.devstack.nats_cluster import NatsCluster, NatsNode

ELECTED_WITHIN = 30.0
"""Seconds for a new stream leader after a kill (JetStream's election timeouts are 4 to 9 s
after the last heartbeat)."""
DRAINED_WITHIN = 40.0
"""Seconds for the outbox to empty once JetStream takes messages again (the relay waits
1 s between failed batches; a leader elected, it publishes a batch in milliseconds)."""
PROMPT = 2.0
"""Seconds a request may take while JetStream has no quorum (it takes milliseconds)."""


async def _replicas_current(nc: NatsClient) -> bool:
    """Every stream has a leader and its other replicas are current (caught up)."""
    for stream in STREAMS:
        try:
            info = await nc.jetstream(timeout=1.0).stream_info(stream)
        except (nats.errors.Error, TimeoutError):  # no leader yet
            return False
        replicas = info.cluster.replicas if info.cluster else None
        if not info.cluster or not info.cluster.leader or len(replicas or []) != REPLICAS - 1:
            return False
        if not all(r.current for r in replicas or []):
            return False
    return True


@pytest.mark.parametrize("end", ["kill", "stop"])
async def test_the_stream_leader_gone_under_load_loses_and_repeats_nothing(
    cluster_api: ClusterApi, nats_cluster: NatsCluster, monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    """`end`: kill -9, or SIGTERM (JetStream hands the leadership over: a rolling restart)."""
    api = await cluster_api(cooldown=0.0)
    outbox = api.services.backends.registry.outbox
    tap = OutboxTap(outbox, monkeypatch)
    watcher = await connect_nats(nats_cluster.url, "cluster-test")
    try:
        for stream in STREAMS:
            info = await watcher.jetstream().stream_info(stream)
            assert info.config.num_replicas == REPLICAS
        for i in range(4):
            await ready_proxy(api, f"cl{i}")
        load, watch = Load(api), LengthWatch(outbox)
        async with load.running(), watch.running():
            await until(_writes_past(load, 60), 20, "events flowing")
            leader = await stream_leader(watcher, subjects.EVENT_STREAM)
            node = nats_cluster.node(leader)
            await asyncio.to_thread(node.kill if end == "kill" else node.stop)
            killed_at = load.writes

            async def new_leader() -> bool:
                return (await stream_leader(watcher, subjects.EVENT_STREAM)) not in ("", leader)

            elected = await until(new_leader, ELECTED_WITHIN, "a new event stream leader")
            await until(_writes_past(load, load.writes + 60), 20, "events after the election")
        writes_during = load.writes - killed_at
        drained = await until(_outbox_empty(outbox), DRAINED_WITHIN, "the outbox to drain")
        await asyncio.to_thread(node.start)
        await asyncio.to_thread(nats_cluster.wait_formed)
        back = await until(lambda: _replicas_current(watcher), 30, "the server back and caught up")
        assert not load.failures(), load.failures()
        counts = await assert_each_once(watcher, tap)
        print(
            f"{end} {leader} (event stream leader): new leader in {elected:.1f} s, "
            f"outbox at most {watch.longest} entries, {writes_during} writes meanwhile, drained "
            f"{drained:.1f} s after the load; back and current in {back:.1f} s; {counts}"
        )
    finally:
        await watcher.close()


async def test_two_of_three_stopped_grants_answer_and_the_outbox_keeps_everything(
    cluster_api: ClusterApi, nats_cluster: NatsCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = await cluster_api(cooldown=0.0)
    backends = api.services.backends
    outbox = backends.registry.outbox
    tap = OutboxTap(outbox, monkeypatch)
    for i in range(4):
        await ready_proxy(api, f"nq{i}")
    await until(_outbox_empty(outbox), 10, "the outbox to drain before the outage")

    # The server the API is connected to and one more: the API moves to the third.
    url = backends.nats.connected_url
    assert url is not None
    first = next(n for n in nats_cluster.nodes if n.client_port == url.port)
    stopped: list[NatsNode] = [first, next(n for n in nats_cluster.nodes if n is not first)]
    for node in stopped:
        await asyncio.to_thread(node.stop)

    load = Load(api)
    lengths = []
    slowest = 0.0
    for _ in range(10):
        started = time.monotonic()
        await load.one_round()
        slowest = max(slowest, (time.monotonic() - started) / 3)
        lengths.append(await outbox.length())
    assert not load.failures(), load.failures()
    assert slowest < PROMPT, f"a request took {slowest:.2f} s without a JetStream quorum"
    assert lengths == sorted(lengths), lengths
    assert lengths[-1] > lengths[0], lengths
    assert lengths[-1] == load.writes + 10, (lengths, load.writes)  # +1 intent a create
    ready = (await api.anon.get("/readyz")).json()

    for node in stopped:
        await asyncio.to_thread(node.start)
    await asyncio.to_thread(nats_cluster.wait_formed)
    drained = await until(_outbox_empty(outbox), DRAINED_WITHIN, "the outbox to drain")
    watcher = await connect_nats(nats_cluster.url, "cluster-test")
    try:
        counts = await assert_each_once(watcher, tap)
    finally:
        await watcher.close()
    print(
        f"no quorum: {load.writes} writes answered (slowest {slowest * 1000:.0f} ms), "
        f"outbox {lengths[0]} -> {lengths[-1]}, /readyz {ready}; drained {drained:.1f} s "
        f"after the restart; {counts}"
    )


def _writes_past(load: Load, n: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return load.writes >= n

    return check


def _outbox_empty(outbox: Outbox) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await outbox.length() == 0

    return check
