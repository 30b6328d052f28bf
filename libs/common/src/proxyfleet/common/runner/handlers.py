"""What a provisioner does with one intent: registry transitions and provider calls.

Each transition announces itself: the registry's script appends its event (and, for a
failed proxy, the delete intent that cleans up its resources) to the outbox, which the
runner's relay publishes. Every handler is idempotent (intents are delivered at least
once, maybe twice at once by two replicas): the registry's generation-checked transitions
decide who moves a proxy, and the adapter adopts a resource that already exists.
"""

from __future__ import annotations

from typing import Any

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import (
    Conflict,
    NotFound,
    PermanentProviderError,
    ProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import RETRIES
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.runner.backoff import redelivery_delay
from proxyfleet.common.runner.calls import timed_call
from proxyfleet.common.runner.keyed import KeyedLocks
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.runner.verdict import Delivery, Verdict
from proxyfleet.common.store.registry import ProxyRegistry
from proxyfleet.common.wire.models import (
    CreateIntent,
    DeleteIntent,
    Intent,
    Phase,
    Provisioned,
    Proxy,
    ProxySpec,
)

log = get_logger("proxyfleet.runner")

RELOADS = 5
"""Times a handler reloads a proxy that changed under it before trying again later."""
REASON_MAX = 500
"""Longest failure reason stored on a proxy (provider messages can be long)."""
LIVE = frozenset({Phase.PENDING, Phase.PROVISIONING, Phase.BOOTING, Phase.READY, Phase.UNHEALTHY})
"""Phases in which a proxy wants its resources: a delete intent for it is stale."""


class IntentHandler:
    def __init__(
        self,
        *,
        provider: Provider,
        registry: ProxyRegistry,
        settings: RunnerSettings,
        installation_id: str,
        clock: Clock,
        in_hand: KeyedLocks | None = None,
    ) -> None:
        """`in_hand`: the per-proxy locks, shared with the adopter (it leaves alone a
        resource whose intent is being handled here)."""
        self._provider = provider
        self._registry = registry
        self._settings = settings
        self._installation_id = installation_id
        self._clock = clock
        self._name = settings.provider
        self._per_proxy = in_hand if in_hand is not None else KeyedLocks()

    async def handle(self, intent: Intent, delivery: Delivery) -> Verdict:
        async with self._per_proxy.hold(intent.proxy_id):
            if isinstance(intent, CreateIntent):
                return await self._create(intent.proxy_id, delivery)
            return await self._delete(intent, delivery)

    # ---- create ---------------------------------------------------------------------

    async def _create(self, proxy_id: str, delivery: Delivery) -> Verdict:
        for _ in range(RELOADS):
            proxy = await self._registry.get(proxy_id)
            if proxy is None:
                log.info("runner.create_for_unknown_proxy", proxy_id=proxy_id)
                return Verdict.ack("ignored")
            if proxy.provider != self._name:
                log.warning("runner.create_for_other_provider", proxy_id=proxy_id)
                return Verdict.ack("ignored")
            if proxy.phase is Phase.PROVISIONING:
                return await self._provision(proxy, proxy.gen, delivery)
            if proxy.phase is not Phase.PENDING:
                log.debug("runner.create_already_handled", proxy_id=proxy_id, phase=proxy.phase)
                return Verdict.ack("done")
            try:
                moved = await self._registry.transition(
                    proxy_id, Phase.PROVISIONING, expected_gen=proxy.gen
                )
            except Conflict:
                continue
            return await self._provision(proxy, moved.gen, delivery)
        return Verdict.nak(self._backoff(delivery), "contended")

    async def _provision(self, proxy: Proxy, gen: int, delivery: Delivery) -> Verdict:
        spec = ProxySpec(
            proxy_id=proxy.id,
            installation_id=self._installation_id,
            zone=proxy.zone,
            username=proxy.username,
            password=proxy.password,
            labels=proxy.labels,
            placement=proxy.placement,
        )
        try:
            done = await timed_call(self._name, "create", self._provider.create(spec))
        except TemporaryProviderError as exc:
            if delivery.last:
                reason = f"gave up after {delivery.number} attempts: {exc}"
                return await self._fail(proxy.id, gen, reason)
            return self._retry("create", proxy.id, exc, delivery)
        except PermanentProviderError as exc:
            return await self._fail(proxy.id, gen, str(exc) or type(exc).__name__)
        # A create that landed in another zone moves the proxy there in the same script
        # that records the result (and the booting event says so); the same zone is no move.
        zone = done.zone or proxy.zone
        # A provider that chose the credentials or scheme (a vendor session) stores them
        # with the address, in the same step.
        chosen: dict[str, Any] = {}
        if done.username:
            chosen = {"username": done.username, "password": done.password}
        if done.scheme is not None:
            chosen["scheme"] = done.scheme
        try:
            moved = await self._registry.transition(
                proxy.id,
                Phase.BOOTING,
                expected_gen=gen,
                host=done.host,
                port=done.port,
                resource_id=done.resource_id,
                boot_deadline=self._clock.now() + self._settings.boot_timeout,
                zone=zone,
                **chosen,
            )
        except (Conflict, NotFound):
            return await self._after_lost_race(proxy.id, done)
        if zone != proxy.zone:
            log.info("runner.proxy_zone_moved", proxy_id=proxy.id, zone=zone, from_zone=proxy.zone)
        log.info(
            "runner.proxy_booting", proxy_id=proxy.id, host=done.host, port=done.port, gen=moved.gen
        )
        return Verdict.ack()

    async def _after_lost_race(self, proxy_id: str, done: Provisioned) -> Verdict:
        """The proxy changed while its resource was being made: keep the resource only if
        the proxy still wants it."""
        proxy = await self._registry.get(proxy_id)
        if proxy is None or proxy.phase not in LIVE:
            log.info("runner.resource_unwanted", proxy_id=proxy_id)
            await self._cleanup(proxy_id, done.resource_id)
            return Verdict.ack("discarded")
        return Verdict.ack("done")

    async def _fail(self, proxy_id: str, gen: int, reason: str) -> Verdict:
        """Fail the proxy; its delete intent (queued by the same script) cleans up."""
        reason = reason[:REASON_MAX]
        try:
            await self._registry.transition(proxy_id, Phase.FAILED, expected_gen=gen, reason=reason)
        except (Conflict, NotFound) as exc:
            log.info("runner.fail_superseded", proxy_id=proxy_id, error=str(exc))
            await self._cleanup(proxy_id, "")
        else:
            log.warning("runner.proxy_failed", proxy_id=proxy_id, reason=reason)
        return Verdict.ack("failed")

    async def _cleanup(self, proxy_id: str, resource_id: str) -> None:
        """Best effort: what is left behind is found and deleted by the GC service."""
        try:
            await timed_call(self._name, "delete", self._provider.delete(proxy_id, resource_id))
        except ProviderError as exc:
            log.warning("runner.cleanup_failed", proxy_id=proxy_id, error=str(exc))

    # ---- delete ---------------------------------------------------------------------

    async def _delete(self, intent: DeleteIntent, delivery: Delivery) -> Verdict:
        proxy = await self._registry.get(intent.proxy_id)
        if proxy is not None and proxy.phase in LIVE:
            log.warning("runner.stale_delete_ignored", proxy_id=proxy.id)
            return Verdict.ack("ignored")
        resource_id = intent.resource_id or (proxy.resource_id if proxy else "")
        try:
            await timed_call(
                self._name, "delete", self._provider.delete(intent.proxy_id, resource_id)
            )
        except TemporaryProviderError as exc:
            if delivery.last:
                log.error(  # noqa: TRY400  (a provider's message, no traceback to show)
                    "runner.delete_gave_up", error=str(exc)
                )
                return Verdict.ack("gave_up")
            return self._retry("delete", intent.proxy_id, exc, delivery)
        except PermanentProviderError as exc:
            log.error("runner.delete_failed", proxy_id=intent.proxy_id, error=str(exc))  # noqa: TRY400
            return Verdict.ack("failed")
        if proxy is not None and proxy.phase is Phase.DELETING:
            await self._mark_deleted(intent.proxy_id)
        return Verdict.ack()

    async def _mark_deleted(self, proxy_id: str) -> None:
        for _ in range(RELOADS):
            proxy = await self._registry.get(proxy_id)
            if proxy is None or proxy.phase is not Phase.DELETING:
                return
            try:
                await self._registry.transition(proxy_id, Phase.DELETED, expected_gen=proxy.gen)
            except Conflict:
                continue
            log.info("runner.proxy_deleted", proxy_id=proxy_id)
            return

    # ---- helpers --------------------------------------------------------------------

    def _retry(
        self, op: str, proxy_id: str, exc: TemporaryProviderError, delivery: Delivery
    ) -> Verdict:
        delay = redelivery_delay(self._settings, delivery.number, exc.retry_after)
        RETRIES.labels(op=f"provider.{op}").inc()
        log.warning(
            "runner.provider_retrying",
            op=op,
            proxy_id=proxy_id,
            error=str(exc),
            attempt=delivery.number,
            retry_in=round(delay, 3),
        )
        return Verdict.nak(delay)

    def _backoff(self, delivery: Delivery) -> float:
        return redelivery_delay(self._settings, delivery.number)
