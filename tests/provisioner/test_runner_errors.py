"""How the runner handles provider errors: temporary ones are retried with backoff through
JetStream redeliveries, permanent ones fail the proxy with the provider's message.

The provider here is a small fake at our own port (the Provider protocol); NATS and Redis
are real."""

from __future__ import annotations

import asyncio
import time

import msgspec
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.runner import backoff_delay
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.events import EventData
from proxyfleet.common.wire.models import (
    CreateIntent,
    DeleteIntent,
    ManagedResource,
    Phase,
    Provisioned,
    ProxySpec,
    ResourceList,
)

from .conftest import RunnerFactory
from .helpers import EventLog, add_pending_proxy, fast_settings, wait_for_phase, wait_until


class FlakyProvider:
    """Raises the given errors on successive create/delete calls, then succeeds."""

    def __init__(
        self,
        create_errors: list[Exception] | None = None,
        delete_errors: list[Exception] | None = None,
        list_error: Exception | None = None,
        create_seconds: float = 0.0,
    ) -> None:
        self.create_errors = list(create_errors or [])
        self.delete_errors = list(delete_errors or [])
        self.list_error = list_error
        self.create_seconds = create_seconds
        self.create_calls: list[float] = []
        self.specs: list[ProxySpec] = []
        self.delete_calls: list[str] = []

    async def create(self, spec: ProxySpec) -> Provisioned:
        self.create_calls.append(time.monotonic())
        self.specs.append(spec)
        await asyncio.sleep(self.create_seconds)
        if self.create_errors:
            raise self.create_errors.pop(0)
        return Provisioned(resource_id=f"res-{spec.proxy_id}", host="10.0.0.7", port=3128)

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        self.delete_calls.append(proxy_id)
        if self.delete_errors:
            raise self.delete_errors.pop(0)

    async def list_managed(self) -> list[ManagedResource]:
        if self.list_error:
            raise self.list_error
        return []

    async def close(self) -> None:
        return None


def retries(op: str) -> float:
    return REGISTRY.get_sample_value("proxyfleet_retries_total", {"op": op}) or 0.0


def provider_calls(provider: str, op: str, result: str) -> float:
    labels = {"provider": provider, "op": op, "result": result}
    return REGISTRY.get_sample_value("proxyfleet_provider_call_seconds_count", labels) or 0.0


async def test_temporary_errors_are_retried_with_backoff(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    event_log: EventLog,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider(create_errors=[TemporaryProviderError("rate limited")] * 2)
    settings = fast_settings(provider_name, backoff_initial=0.2, backoff_max=1.0)
    await start_runner(fake, settings)
    retried_before = retries("provider.create")
    proxy = await add_pending_proxy(registry, provider_name)  # its create intent goes out

    booting = await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    assert (booting.host, booting.port, booting.resource_id) == (
        "10.0.0.7",
        3128,
        f"res-{proxy.id}",
    )
    assert len(fake.create_calls) == 3
    gaps = [b - a for a, b in zip(fake.create_calls, fake.create_calls[1:], strict=False)]
    assert gaps[0] >= 0.2 * 0.9  # first NAK delay: backoff_initial
    assert gaps[1] >= 0.4 * 0.9  # then doubled
    assert retries("provider.create") - retried_before == 2
    assert provider_calls(provider_name, "create", "temporary") == 2
    assert provider_calls(provider_name, "create", "ok") == 1
    await wait_until(lambda: _types(event_log, proxy.id, 3), 5, "three events")
    assert event_log.types_of(proxy.id) == ["proxy.pending", "proxy.provisioning", "proxy.booting"]


async def test_the_provider_gets_the_proxy_s_labels_and_placement(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider()
    await start_runner(fake, fast_settings(provider_name))
    placement = {"image": "debian-12"}
    proxy = await add_pending_proxy(
        registry, provider_name, labels={"team": "qa"}, placement=placement
    )
    await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    (spec,) = fake.specs
    assert (spec.labels, spec.placement) == ({"team": "qa"}, placement)
    assert (spec.username, spec.password) == (proxy.username, proxy.password)


async def test_temporary_errors_until_the_last_delivery_fail_the_proxy(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider(create_errors=[TemporaryProviderError("zone busy")] * 10)
    await start_runner(fake, fast_settings(provider_name, max_deliver=3))
    proxy = await add_pending_proxy(registry, provider_name)
    failed = await wait_for_phase(registry, proxy.id, Phase.FAILED)
    assert failed.reason == "gave up after 3 attempts: zone busy"
    assert len(fake.create_calls) == 3
    # partial resources cleaned up, by the delete intent the failure queued
    await wait_until(lambda: _deleted_once(fake, proxy.id), 5, "the cleanup")


async def test_a_permanent_error_fails_the_proxy_with_the_providers_message(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    event_log: EventLog,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider(create_errors=[PermanentProviderError("quota 'CPUS' exceeded")])
    await start_runner(fake, fast_settings(provider_name))
    proxy = await add_pending_proxy(registry, provider_name)
    failed = await wait_for_phase(registry, proxy.id, Phase.FAILED)
    assert failed.reason == "quota 'CPUS' exceeded"
    assert len(fake.create_calls) == 1
    await wait_until(lambda: _deleted_once(fake, proxy.id), 5, "the cleanup")
    await wait_until(lambda: _types(event_log, proxy.id, 3), 5, "three events")
    event = event_log.of(proxy.id)[-1]
    assert event.type == "proxy.failed"
    assert event.data == EventData(from_="provisioning", gen=3, reason="quota 'CPUS' exceeded")


async def test_a_redelivered_intent_continues_a_provisioning_proxy(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider()
    # Written before any runner runs; the relay publishes their intents once one starts.
    proxy = await add_pending_proxy(registry, provider_name)
    await registry.transition(proxy.id, Phase.PROVISIONING)  # a replica died right after this
    deleted = await add_pending_proxy(registry, provider_name)  # create intent, then ...
    await registry.transition(deleted.id, Phase.DELETING)  # ... a delete intent
    await start_runner(fake, fast_settings(provider_name))
    await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    await publisher.intent(provider_name, CreateIntent(proxy_id=proxy.id))  # a duplicate
    await wait_for_phase(registry, deleted.id, Phase.DELETED)
    assert len(fake.create_calls) == 1


async def test_delete_retries_temporary_errors_then_marks_deleted(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider(delete_errors=[TemporaryProviderError("host down")])
    await start_runner(fake, fast_settings(provider_name))
    proxy = await add_pending_proxy(registry, provider_name)
    await registry.transition(proxy.id, Phase.FAILED, reason="boot timeout")
    await publisher.intent(provider_name, DeleteIntent(proxy_id=proxy.id))
    await wait_until(lambda: _deleted_twice(fake), 5, "a second delete call")
    failed = await registry.get(proxy.id)
    assert failed is not None
    assert failed.phase is Phase.FAILED  # a failed proxy stays failed

    await registry.transition(proxy.id, Phase.DELETING)
    await publisher.intent(provider_name, DeleteIntent(proxy_id=proxy.id, resource_id="r-1"))
    await wait_for_phase(registry, proxy.id, Phase.DELETED)


async def test_a_listing_error_is_answered_with_its_text(
    provider_name: str, nc: NatsClient, start_runner: RunnerFactory
) -> None:
    fake = FlakyProvider(list_error=TemporaryProviderError("api unreachable"))
    await start_runner(fake, fast_settings(provider_name))
    reply = await nc.request(subjects.resources_request(provider_name), b"", timeout=5)
    answer = msgspec.json.decode(reply.data, type=ResourceList)
    assert (answer.resources, answer.error) == ([], "api unreachable")


async def test_heartbeats_keep_a_slow_create_from_being_redelivered(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
) -> None:
    fake = FlakyProvider(create_seconds=2.5)  # longer than ack_wait
    await start_runner(fake, fast_settings(provider_name, ack_wait=1.0, heartbeat_interval=0.2))
    proxy = await add_pending_proxy(registry, provider_name)
    await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    await asyncio.sleep(1.2)  # a redelivery would have come by now
    assert len(fake.create_calls) == 1


def test_backoff_is_exponential_and_bounded() -> None:
    delays = [backoff_delay(n, initial=1, maximum=30, jitter=0) for n in range(1, 9)]
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]
    assert backoff_delay(1000, initial=1, maximum=30) <= 30 * 1.1
    assert backoff_delay(2, initial=1, maximum=30, jitter=0.5, rand=0.5) == 2.5


async def _types(log: EventLog, proxy_id: str, count: int) -> bool:
    return len(log.of(proxy_id)) >= count


async def _deleted_twice(fake: FlakyProvider) -> bool:
    return len(fake.delete_calls) >= 2


async def _created(fake: FlakyProvider, times: int) -> bool:
    return len(fake.create_calls) == times


async def _deleted_once(fake: FlakyProvider, proxy_id: str) -> bool:
    return fake.delete_calls == [proxy_id]


async def test_a_duplicate_create_waits_for_the_first_instead_of_racing_it(
    provider_name: str,
    registry: ProxyRegistry,
    publisher: Publisher,
    start_runner: RunnerFactory,
) -> None:
    """Two create intents of one proxy in hand at once (the API's and a republished one):
    the second runs after the first, finds the proxy booting and calls no provider."""
    fake = FlakyProvider(create_seconds=1.0)
    await start_runner(fake, fast_settings(provider_name))
    proxy = await add_pending_proxy(registry, provider_name)
    await wait_until(lambda: _created(fake, 1), 5, "the first create")
    await publisher.intent(provider_name, CreateIntent(proxy_id=proxy.id))  # while it runs
    await wait_for_phase(registry, proxy.id, Phase.BOOTING)
    await asyncio.sleep(0.5)  # the duplicate has been handled by now (it waited on the lock)
    assert len(fake.create_calls) == 1
