"""What the syncer reports about its sources: a log line, a metric and an event each (a
bad line, a failed or held load), naming the source by key and a line by number, never
by its text (a line may hold credentials, a URL a token)."""

from __future__ import annotations

import msgspec

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.ids import new_event_id
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import Outbox
from proxyfleet.common.wire.events import Event, EventData, EventType
from proxyfleet.common.wire.subjects import event_subject
from proxyfleet.provisioner_static import metrics
from proxyfleet.provisioner_static.pure.lines import Rejected
from proxyfleet.provisioner_static.pure.plan import Held

log = get_logger("proxyfleet.provisioner.static")
_encode = msgspec.json.Encoder().encode


class Reports:
    def __init__(self, provider: str, outbox: Outbox, clock: Clock) -> None:
        self._name = provider
        self._outbox = outbox
        self._clock = clock
        self._over_max = 0

    async def rejected(self, source: str, bad: list[Rejected]) -> None:
        """Each bad line of a load (line 0: an entry added at run time, named in its
        reason)."""
        for r in bad:
            metrics.REJECTED.labels(self._name, source, r.kind).inc()
            log.warning("static.entry_rejected", provider=self._name, source=source,
                        line=r.line, reason=r.reason)  # fmt: skip
            await self._event(EventType.SOURCE_ENTRY_REJECTED, source, r.reason, r.line or None)

    async def load_failed(self, source: str, reason: str) -> None:
        metrics.LOADS.labels(self._name, source, "failed").inc()
        log.warning("static.source_load_failed", provider=self._name, source=source,
                    error=reason)  # fmt: skip
        await self._event(EventType.SOURCE_LOAD_FAILED, source, reason)

    async def held(self, held: Held, guard: float) -> None:
        reason = (
            f"held by the empty guard: it would remove {held.removed} of its {held.had}"
            f" proxies (empty_guard {guard:g}%)"
        )
        metrics.LOADS.labels(self._name, held.source, "held").inc()
        log.warning("static.source_load_held", provider=self._name, source=held.source,
                    removed=held.removed, had=held.had)  # fmt: skip
        await self._event(EventType.SOURCE_LOAD_FAILED, held.source, reason)

    def loaded(self, source: str, entries: int) -> None:
        metrics.LOADS.labels(self._name, source, "ok").inc()
        metrics.ENTRIES.labels(self._name, source).set(entries)

    def over_max(self, count: int, max_proxies: int | None) -> None:
        """Entries max_proxies leaves out; logged when their number changes."""
        if count == self._over_max:
            return
        self._over_max = count
        metrics.NOT_REGISTERED.labels(self._name).set(count)
        if count:
            log.warning("static.over_max_proxies", provider=self._name, count=count,
                        max_proxies=max_proxies)  # fmt: skip

    async def _event(
        self, kind: EventType, source: str, reason: str, line: int | None = None
    ) -> None:
        event = Event(
            type=kind, id=new_event_id(), time=self._clock.now(), proxy_id="",
            provider=self._name, data=EventData(source=source, line=line, reason=reason),
        )  # fmt: skip
        await self._outbox.append(event_subject(kind), event.id, _encode(event))
