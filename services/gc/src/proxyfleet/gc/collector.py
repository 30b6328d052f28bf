"""One GC round: for each provider whose round lock this replica holds (another replica's
rounds are skipped), list its resources over NATS, look their proxies up in the registry,
plan, and publish a delete intent per orphan while the lock is still held (the provisioner
deletes)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.replica import replica_name
from proxyfleet.common.store import InstallationMarker, ProxyRegistry
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ResourceList
from proxyfleet.gc import metrics
from proxyfleet.gc.lead import Leadership
from proxyfleet.gc.plan import Deletion, Refusal, plan_deletions, refusal
from proxyfleet.gc.report import ProviderRound, RoundReport, SkipCause
from proxyfleet.gc.settings import GcSettings

_decoder = msgspec.json.Decoder(ResourceList)

STARTUP_GRACE = 120.0
"""Seconds after the collector starts during which a provider that never answered yet is
logged at info, not warning, when it does not answer: on a first start the GC is often up
before the provisioners (a warning each round would be noise). One that answered once and
then stopped is a warning at once."""


class _Lost(Exception):
    """The provider's round lock is no longer this replica's: stop acting on the listing."""

    def __init__(self, not_sent: int) -> None:
        super().__init__(f"{not_sent} deletions not sent")
        self.not_sent = not_sent


class _Skip(Exception):
    def __init__(self, cause: SkipCause, detail: str) -> None:
        super().__init__(detail)
        self.cause: SkipCause = cause


class Collector:
    def __init__(
        self,
        *,
        nc: NatsClient,
        registry: ProxyRegistry,
        publisher: Publisher,
        providers: Sequence[str],
        installation_id: str,
        settings: GcSettings,
        clock: Clock,
        log: Any = None,
        replica: str = "",
    ) -> None:
        """`replica`: this replica's token on the round locks (default: unique per
        process)."""
        self._nc = nc
        self._registry = registry
        self._installation = registry.installation
        self._publisher = publisher
        self._providers = list(providers)
        self._installation_id = installation_id
        self._settings = settings
        self._clock = clock
        self._log = log if log is not None else get_logger("proxyfleet.gc")
        self._started_at = clock.now()
        self._answered: set[str] = set()
        """Providers that answered a resources request at least once."""
        self._lead = Leadership(registry.locks, replica or replica_name("gc"), settings.lock_ttl)

    @property
    def leads(self) -> frozenset[str]:
        """Providers whose round lock this replica holds (as of its last step)."""
        return self._lead.held

    async def run_forever(self, stop: asyncio.Event) -> None:
        """A round every interval until `stop` is set (a running round is finished first)."""
        while not stop.is_set():
            await self.run_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._settings.interval)
        await self.release()

    async def release(self) -> None:
        """Give the round locks up, so another replica runs the next rounds at once rather
        than after the ttl (a replica that dies leaves them to expire)."""
        try:
            await self._lead.release()
        except StoreUnavailable as exc:
            self._log.warning("gc.release_failed", error=str(exc))

    async def run_once(self) -> RoundReport:
        """One round over every provider; a provider that fails is skipped, never fatal."""
        report = RoundReport(
            providers=[await self._collect(name) for name in self._providers],
            dry_run=self._settings.dry_run,
        )
        if report.result == "held":  # a standby: the holder counts and logs the round
            self._log.debug("gc.round", result="held")
            return report
        metrics.RUNS.labels(result=report.result).inc()
        metrics.LAST_RUN.set(self._clock.now())
        self._log.info(
            "gc.round",
            result=report.result,
            deletions=len(report.deletions),
            refused=[p.provider for p in report.providers if p.refused],
            held=[p.provider for p in report.providers if p.held_by],
            dry_run=report.dry_run,
        )
        return report

    async def _collect(self, provider: str) -> ProviderRound:
        out = ProviderRound(provider)
        try:
            holder = await self._lead.take(provider)
            if holder != self._lead.token:
                out.held_by = holder
                metrics.ROUNDS_SKIPPED.labels(provider=provider, reason="held").inc()
                self._log.debug("gc.provider_held", provider=provider, holder=holder)
                return out
            listing = await self._list(provider)
            out.listed = len(listing.resources)
            mine = [r for r in listing.resources if r.installation_id == self._installation_id]
            ids = list(dict.fromkeys(r.proxy_id for r in mine))
            proxies = dict(zip(ids, await self._registry.get_many(ids), strict=True))
            # After the lookups: a reset between them and this read shows as a new (or no)
            # marker, so the entries it lost count as survivors, never as orphans.
            marker = await self._installation.marker()
            absent = [pid for pid, p in proxies.items() if p is None]
            tombstoned = await self._installation.tombstoned(absent)
            now = self._clock.now()
            plan = plan_deletions(
                self._installation_id,
                now,
                self._settings.min_age,
                mine,
                proxies,
                marker.created_at if marker else 0.0,
                tombstoned,
            )
            refused = refusal(
                self._installation_id,
                marker.installation_id if marker else None,
                len(plan),
                len(mine),
                self._settings.max_delete_share,
            )
            if plan and refused is not None:
                self._refuse(out, refused, len(plan), len(mine), marker)
                plan = []
            if len(plan) > self._settings.max_deletions:
                metrics.CAPPED.labels(provider=provider).inc()
                self._log.warning(
                    "gc.capped",
                    provider=provider,
                    orphans=len(plan),
                    max_deletions=self._settings.max_deletions,
                )
                plan = sorted(plan, key=lambda d: d.age, reverse=True)[
                    : self._settings.max_deletions
                ]
            for i, deletion in enumerate(plan):
                await self._fence(provider, not_sent=len(plan) - i)
                await self._delete(provider, deletion)
                out.deletions.append(deletion)
        except _Lost as lost:
            out.lost = True
            metrics.ROUNDS_SKIPPED.labels(provider=provider, reason="lost").inc()
            self._log.warning(
                "gc.lock_lost",
                provider=provider,
                sent=len(out.deletions),
                not_sent=lost.not_sent,
            )
        except _Skip as skip:
            out.skipped = skip.cause
            log = self._log.warning
            if skip.cause == "no_answer" and self._not_up_yet(provider):
                log = self._log.info
            log("gc.provider_skipped", provider=provider, cause=skip.cause, error=str(skip))
        except Exception as exc:
            out.skipped = "error"
            self._log.exception("gc.provider_failed", provider=provider, error=repr(exc))
        if out.skipped is not None:
            metrics.SKIPS.labels(provider=provider, cause=out.skipped).inc()
        return out

    async def _fence(self, provider: str, not_sent: int) -> None:
        """Before each delete: the provider's lock must still be this replica's, or the
        listing may be stale (another replica may have run rounds since)."""
        if not await self._lead.still_holds(provider):
            raise _Lost(not_sent)

    def _not_up_yet(self, provider: str) -> bool:
        """Never answered, and the collector started less than STARTUP_GRACE ago."""
        young = self._clock.now() - self._started_at < STARTUP_GRACE
        return young and provider not in self._answered

    def _refuse(
        self,
        out: ProviderRound,
        why: Refusal,
        planned: int,
        listed: int,
        marker: InstallationMarker | None,
    ) -> None:
        out.refused, out.refused_count = why, planned
        metrics.REFUSALS.labels(provider=out.provider, reason=why.value).inc()
        self._log.error(
            "gc.refused",
            provider=out.provider,
            reason=why.value,
            would_delete=planned,
            resources=listed,
            max_delete_share=self._settings.max_delete_share,
            marker_installation_id=marker.installation_id if marker else None,
        )

    async def _list(self, provider: str) -> ResourceList:
        subject = subjects.resources_request(provider)
        try:
            reply = await self._nc.request(subject, b"", timeout=self._settings.request_timeout)
        except nats.errors.Error as exc:
            raise _Skip("no_answer", f"{type(exc).__name__}: {exc}") from exc
        self._answered.add(provider)  # up, whatever it said
        try:
            listing = _decoder.decode(reply.data)
        except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
            raise _Skip("bad_answer", f"not a ResourceList: {exc}") from exc
        if listing.error:
            raise _Skip("error_answer", listing.error)
        if listing.provider != provider:
            raise _Skip("bad_answer", f"answer is for provider {listing.provider!r}")
        return listing

    async def _delete(self, provider: str, deletion: Deletion) -> None:
        res = deletion.resource
        dry_run = self._settings.dry_run
        fields = {
            "provider": provider,
            "resource_id": res.resource_id,
            "proxy_id": res.proxy_id,
            "why": deletion.why.describe(),
            "age_s": round(deletion.age, 1),
        }
        if dry_run:
            self._log.info("gc.would_delete", **fields)
        else:
            await self._publisher.delete(
                provider,
                res.proxy_id,
                resource_id=res.resource_id,
                reason=f"gc: {deletion.why.describe()}",
                dedupe_key=f"gc:{res.resource_id}",
            )
            self._log.info("gc.delete_requested", **fields)
        metrics.DELETIONS.labels(
            provider=provider, reason=deletion.why.value, dry_run=str(dry_run).lower()
        ).inc()
