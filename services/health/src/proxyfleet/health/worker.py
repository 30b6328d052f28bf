"""The probe loop: claim due proxies, probe them concurrently, record and announce results.

Three stages, joined by in-memory queues, so a slow probe never holds up the others:

  claim (1 task)  -- `registry.claim_probe_share`: atomic, each proxy once per interval
                     across replicas (a failed external one with backoff); at most this
                     replica's fair share of the due proxies (ceil(due / live replicas))
                     and its free probe slots, then waits a jittered tick, so which
                     replica claims next is random and each gets about the same share.
  probe (N tasks) -- a fixed pool of `concurrency` tasks, each running one probe at a time.
  write (K tasks) -- `writers` tasks, each taking every result waiting (up to claim_batch):
                     publish each ProbeResult on core NATS (no flush), apply the hysteresis
                     of phases (`decide_after_probe`) and of exit addresses (egress.py),
                     write the streaks of the proxies staying in their phase in one
                     pipelined round trip (`registry.update_many`), each newly confirmed
                     address (rare), then each transition (writes.py); the scripts append
                     their events to the outbox, which the worker's relay publishes. An
                     unhealthy proxy past its timeout stays unhealthy while most of its
                     provider is (holds.py).

A proxy claimed again while its previous probe is still in this process is skipped: its
streaks must be read after the previous result is written. Across replicas the same holds
because a probe's timeout is shorter than the interval (checked in HealthSettings).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import socket
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.domain.egress import EgressStep
from proxyfleet.common.domain.lifecycle import ProbeDecision, decide_after_probe
from proxyfleet.common.messaging.relay import OutboxRelay
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.store.egress import EgressStore
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import Phase, ProbeResult, Proxy
from proxyfleet.health import metrics
from proxyfleet.health.egress import EgressRecorder
from proxyfleet.health.holds import TimeoutHolds
from proxyfleet.health.prober import ERROR, Outcome, Prober
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.writes import probe_fields, transition

log = get_logger("proxyfleet.health.worker")

_encode = msgspec.json.Encoder().encode


class HealthWorker:
    """Shares the probe work of the whole fleet with every other replica."""

    def __init__(
        self,
        settings: HealthSettings,
        *,
        registry: ProxyRegistry,
        egress: EgressStore,
        nc: NatsClient,
        prober: Prober,
        clock: Clock,
        providers: Sequence[str] = (),
        relay: OutboxRelay | None = None,
        replica: str = "",
        require_ip: Collection[str] = (),
    ) -> None:
        """`relay`: publishes the outbox (events and intents of every transition); None
        builds one on `nc`, run by `run`. `replica`: this process's name among the
        replicas sharing the probes (default: host name, pid and a random suffix, so two
        workers in one process count as two). `egress`: where confirmed exit addresses
        are written (the registry's Redis). `require_ip`: the providers whose proxies are
        not ready without a known exit address."""
        self.replica = replica or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._settings = settings
        self._registry = registry
        self.relay = relay or OutboxRelay(registry.outbox, nc, service="health")
        self._nc = nc
        self._prober = prober
        self._clock = clock
        self._providers = tuple(providers)
        self._rules = settings.hysteresis
        self._egress = EgressRecorder(egress, settings, require_ip)
        self._todo: asyncio.Queue[Proxy] = asyncio.Queue()
        self._done: asyncio.Queue[tuple[Proxy, Outcome]] = asyncio.Queue()
        self._in_flight: set[str] = set()
        self._room = asyncio.Event()
        self._claim_ok = False
        self._relay_ok = False
        self._holds = TimeoutHolds(registry, settings.unhealthy_max_share)
        self.probes_done = 0
        """Probes this process has recorded (tests and benchmarks read it)."""

    @property
    def ready(self) -> bool:
        """The last claim reached Redis and the relay is ready (readiness also wants NATS;
        see main)."""
        return self._claim_ok and self.relay_ready

    @property
    def relay_ready(self) -> bool:
        return self._relay_ok

    async def run(self, stop: asyncio.Event) -> None:
        """Probe until `stop` is set, then let the probes in flight finish and be recorded."""
        tasks = [
            *(asyncio.create_task(self._probe_loop()) for _ in range(self._settings.concurrency)),
            *(asyncio.create_task(self._write_loop()) for _ in range(self._settings.writers)),
            asyncio.create_task(self._stats_loop(stop)),
        ]
        relay_stop = asyncio.Event()  # stopped after the last results are recorded
        relay = asyncio.create_task(self.relay.run(relay_stop))
        try:
            await self._claim_loop(stop)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.timeout + 2.0):
                    await self._todo.join()
                    await self._done.join()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            relay_stop.set()
            await relay
            with contextlib.suppress(StoreUnavailable):
                await self._registry.leave_probe_share(self.replica)

    # ---- claim --------------------------------------------------------------------------

    async def _claim_loop(self, stop: asyncio.Event) -> None:
        s = self._settings
        while not stop.is_set():
            room = s.concurrency - len(self._in_flight)
            if room <= 0:
                self._room.clear()
                await _wait(self._room, s.tick)
                continue
            want = min(room, s.claim_batch)
            try:
                claim = await self._registry.claim_probe_share(
                    s.interval, want, self.replica, failed_wait=s.failed_wait
                )
            except StoreUnavailable as exc:  # Redis down: keep trying, stay alive.
                if self._claim_ok:
                    log.warning("health.claim_failed", error=str(exc) or type(exc).__name__)
                self._claim_ok = False
                await _wait(stop, min(1.0, s.interval))
                continue
            self._claim_ok = True
            self._relay_ok = await self.relay.ready()
            metrics.REPLICAS.set(claim.replicas)
            metrics.CLAIMED.inc(len(claim.proxies))
            for proxy in claim.proxies:
                if proxy.id in self._in_flight:
                    continue
                self._in_flight.add(proxy.id)
                self._todo.put_nowait(proxy)
            if len(claim.proxies) < want:
                # Jittered: replicas ticking in step would always claim in the same order.
                await _wait(stop, s.tick * random.uniform(0.5, 1.5))

    # ---- probe --------------------------------------------------------------------------

    async def _probe_loop(self) -> None:
        while True:
            proxy = await self._todo.get()
            try:
                outcome = await self._prober.probe(proxy)
            except Exception as exc:  # a bug in the prober must not stop the pool
                log.exception("health.probe_crashed", proxy_id=proxy.id)
                outcome = Outcome(
                    ProbeResult(
                        proxy_id=proxy.id,
                        time=self._clock.now(),
                        ok=False,
                        latency_ms=0.0,
                        error=f"probe error: {type(exc).__name__}",
                    ),
                    ERROR,
                )
            self._done.put_nowait((proxy, outcome))
            self._todo.task_done()

    # ---- record -------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        batch_max = self._settings.claim_batch
        while True:
            batch = [await self._done.get()]
            while len(batch) < batch_max and not self._done.empty():
                batch.append(self._done.get_nowait())
            try:
                await self.record_many(batch)
            except StoreUnavailable as exc:  # these proxies are probed again next interval
                log.warning("health.record_failed", probes=len(batch), error=str(exc))
            finally:
                for proxy, _ in batch:
                    self._in_flight.discard(proxy.id)
                    self._done.task_done()
                self.probes_done += len(batch)
                self._room.set()

    async def record(self, proxy: Proxy, outcome: Outcome) -> None:
        """Publish one probe's result, then write its streaks or make its transition."""
        await self.record_many([(proxy, outcome)])

    async def record_many(self, batch: Sequence[tuple[Proxy, Outcome]]) -> None:
        """Publish every result on core NATS; write the streaks of the proxies that stay in
        their phase in one pipelined round trip; then make and announce each transition."""
        now = self._clock.now()
        kinds: Counter[str] = Counter()
        updates: list[tuple[str, int | None, dict[str, Any]]] = []
        moves: list[tuple[Proxy, Phase, ProbeDecision, dict[str, Any]]] = []
        confirms: list[tuple[Proxy, EgressStep, dict[str, Any]]] = []
        may_time_out: dict[str, bool] = {}  # by provider, read once per batch
        for proxy, outcome in batch:
            result = outcome.result
            kinds[outcome.kind] += 1
            metrics.PROBE_SECONDS_BY_RESULT[outcome.kind].observe(result.latency_ms / 1000)
            # Not persisted and superseded by the next probe: skipped while NATS is away
            # rather than put in the reconnect buffer the relay needs.
            if self._nc.is_connected:
                with contextlib.suppress(nats.errors.Error):
                    await self._nc.publish(subjects.probe_subject(proxy.id), _encode(result))
            step = self._egress.step(proxy, outcome)
            decision = decide_after_probe(
                proxy.phase,
                result.ok,
                proxy.ok_streak,
                proxy.fail_streak,
                now=now,
                boot_deadline=proxy.boot_deadline,
                since=proxy.updated_at,  # set by transitions only: when it entered its phase
                error=result.error,
                rules=self._rules,
            )
            decision = self._egress.gate(proxy, decision, step, now)
            fields = probe_fields(decision, result, step)
            timed_out = proxy.phase is Phase.UNHEALTHY and decision.next_phase is Phase.FAILED
            if decision.next_phase is None or (
                timed_out and not await self._holds.may_time_out(proxy.provider, may_time_out)
            ):
                if step.changed:  # the egress script writes the streaks too
                    confirms.append((proxy, step, fields))
                else:
                    updates.append((proxy.id, proxy.gen, fields))
            else:
                if step.changed:  # first: a proxy turning ready has its address then
                    confirms.append((proxy, step, {}))
                moves.append((proxy, decision.next_phase, decision, fields))
        for kind, n in kinds.items():
            metrics.PROBES_BY_RESULT[kind].inc(n)
        # Conflict/NotFound per update: moved or removed since the claim; whoever did it
        # owns the proxy now, so those results are dropped.
        await self._registry.update_many(updates)
        for proxy, step, fields in confirms:
            try:
                await self._egress.confirm(proxy, step, fields)
            except StoreUnavailable as exc:  # confirmed again by a later probe
                log.warning("health.egress_failed", proxy_id=proxy.id, error=str(exc))
        for proxy, phase, decision, fields in moves:
            try:
                await transition(self._registry, proxy, phase, decision, fields)
            except StoreUnavailable as exc:  # the others may still get through
                log.warning("health.transition_failed", proxy_id=proxy.id, error=str(exc))

    # ---- gauges -------------------------------------------------------------------------

    async def _stats_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            metrics.PROBES_IN_FLIGHT.set(len(self._in_flight))
            try:
                for provider in self._providers:
                    counts = await self._registry.count_by_phase(provider)
                    metrics.set_phase_counts(provider, counts)
                metrics.PROBE_BACKLOG.set(await self._registry.probe_backlog())
                await self._egress.refresh_gauges()
            except StoreUnavailable as exc:  # the claim loop reports it
                log.debug("health.stats_failed", error=str(exc) or type(exc).__name__)
            await _wait(stop, self._settings.stats_interval)


async def _wait(event: asyncio.Event, seconds: float) -> None:
    """Wait until `event` is set or `seconds` pass, whichever comes first."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
