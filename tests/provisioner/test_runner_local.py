"""The runner end to end: real NATS, real Redis, the local adapter with real processes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient

from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import EventData
from proxyfleet.common.wire.models import CreateIntent, DeleteIntent, Phase, ResourceList
from proxyfleet.provisioner_local.adapter import LocalProvider, start_unregistered_proxy
from proxyfleet.provisioner_local.processes import is_running

from .conftest import RunnerFactory
from .helpers import (
    INSTALLATION,
    EventLog,
    add_pending_proxy,
    connect_status,
    fast_settings,
    processes_referring_to,
    wait_for_phase,
    wait_until,
)

MakeProvider = Callable[..., LocalProvider]


async def test_create_then_delete_through_intents(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    event_log: EventLog,
    start_runner: RunnerFactory,
    make_local_provider: MakeProvider,
    proxy_state_dir: Path,
) -> None:
    await start_runner(make_local_provider(), fast_settings(provider_name, boot_timeout=90))
    before = time.time()
    proxy = await add_pending_proxy(registry, provider_name)  # with its create intent

    booting = await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    assert booting.host == "127.0.0.1"
    assert booting.port > 0
    assert booting.resource_id == f"pf-{proxy.id}"
    assert before + 90 <= booting.boot_deadline <= time.time() + 90
    assert await asyncio.to_thread(connect_status, booting.port, "example.com:443") == 407
    await wait_until(
        lambda: _has(event_log, proxy.id, "proxy.booting"), 5, "the proxy.booting event"
    )
    pending, provisioning, booted = event_log.of(proxy.id)
    assert pending.type == "proxy.pending"
    assert provisioning.type == "proxy.provisioning"
    assert provisioning.data == EventData(from_="pending", gen=2)
    assert booted.data == EventData(from_="provisioning", gen=3)
    assert booted.provider == provider_name
    folder = proxy_state_dir / INSTALLATION / proxy.id
    pids = processes_referring_to(str(folder / "squid.conf")) or processes_referring_to(
        str(folder / "proxypy.json")
    )
    assert pids

    # The move to deleting queues the delete intent.
    await registry.transition(proxy.id, Phase.DELETING, expected_gen=booting.gen)
    await wait_for_phase(registry, proxy.id, Phase.DELETED)
    assert not folder.exists()
    assert not any(is_running(pid) for pid in pids)
    await wait_until(
        lambda: _has(event_log, proxy.id, "proxy.deleted"), 5, "the proxy.deleted event"
    )
    assert event_log.of(proxy.id)[-1].data == EventData(from_="deleting", gen=booting.gen + 2)


async def test_a_stale_delete_intent_does_not_touch_a_live_proxy(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
    make_local_provider: MakeProvider,
) -> None:
    provider = make_local_provider("proxy.py")
    await start_runner(provider, fast_settings(provider_name))
    proxy = await add_pending_proxy(registry, provider_name)
    booting = await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    await publisher.intent(provider_name, DeleteIntent(proxy_id=proxy.id))
    await publisher.intent(provider_name, CreateIntent(proxy_id="p-unknown"))
    await asyncio.sleep(0.5)
    after = await registry.get(proxy.id)
    assert after is not None
    assert (after.phase, after.gen) == (Phase.BOOTING, booting.gen)
    assert [r.proxy_id for r in await provider.list_managed()] == [proxy.id]


async def test_the_reconciler_recovers_a_lost_create_intent(
    provider_name: str,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    start_runner: RunnerFactory,
    make_local_provider: MakeProvider,
) -> None:
    fresh = await add_pending_proxy(registry, provider_name)
    stale = await add_pending_proxy(registry, provider_name, age=60)
    await redis_client.delete(registry.outbox.key)  # both intents lost (e.g. NATS lost them)
    await start_runner(make_local_provider("proxy.py"), fast_settings(provider_name, stale_after=5))
    await wait_for_phase(registry, stale.id, Phase.BOOTING)
    still = await registry.get(fresh.id)
    assert still is not None
    assert still.phase is Phase.PENDING  # not stale yet: its intent may still be on its way


async def test_resources_are_answered_on_request(
    provider_name: str,
    nc: NatsClient,
    start_runner: RunnerFactory,
    make_local_provider: MakeProvider,
) -> None:
    provider = make_local_provider("proxy.py")
    await start_runner(provider, fast_settings(provider_name))
    orphan_id, _ = await start_unregistered_proxy(provider, INSTALLATION, zone="local")
    reply = await nc.request(subjects.resources_request(provider_name), b"", timeout=5)
    answer = msgspec.json.decode(reply.data, type=ResourceList)
    assert answer.provider == provider_name
    assert answer.error == ""
    assert [(r.proxy_id, r.resource_id) for r in answer.resources] == [
        (orphan_id, f"pf-{orphan_id}")
    ]


async def _has(log: EventLog, proxy_id: str, event_type: str) -> bool:
    return event_type in log.types_of(proxy_id)
