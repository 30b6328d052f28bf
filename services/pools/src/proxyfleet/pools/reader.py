"""What one pass sees of a pool (`PoolView`), read from Redis and the providers config in
a few pipelined round trips, whatever the pool's size: its members' few fields, their
blocked targets when the pool quarantines by them, its providers' room, refused grants.

Failed creates are remembered across passes (a failed member leaves the index once its
resources are deleted), so a provider that keeps failing is paused; after a restart the
count starts again."""

from __future__ import annotations

from collections import defaultdict

from proxyfleet.common.domain.pool_spec import PoolRecord
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase, Withheld
from proxyfleet.pools.spread import FAILURE_WINDOW, pause_until
from proxyfleet.pools.view import Member, PoolView, ProviderRoom

HOLDING = (Phase.PENDING, Phase.PROVISIONING, Phase.BOOTING, Phase.READY, Phase.UNHEALTHY,
           Phase.DELETING)  # fmt: skip
"""Phases that count toward a provider's max_proxies (as the create script counts)."""
_PHASES = {p.value: p for p in Phase}
_WITHHELD = {w.value: w for w in Withheld}
"""By value: a dict lookup, where calling the enum costs ten times more (every member of
every pool, every pass)."""


class FailureLog:
    """Failed members seen per provider: (id, when, why), kept FAILURE_WINDOW."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, tuple[float, str]]] = defaultdict(dict)

    def note(self, members: list[Member], now: float) -> None:
        for m in members:
            if m.phase is Phase.FAILED:
                self._seen[m.provider].setdefault(m.id, (m.updated_at, m.reason))
        for seen in self._seen.values():
            for pid in [p for p, (t, _) in seen.items() if now - t > FAILURE_WINDOW]:
                del seen[pid]

    def paused(self, provider: str, now: float) -> tuple[float, str]:
        """Until when the provider's creates pause, and its latest failure's reason."""
        seen = self._seen.get(provider, {})
        until = pause_until([t for t, _ in seen.values()], now)
        latest = max(seen.values(), default=(0.0, ""))
        return until, latest[1]


class PoolReader:
    def __init__(
        self,
        pools: PoolStore,
        registry: ProxyRegistry,
        providers: ProvidersConfig,
        failures: FailureLog | None = None,
    ) -> None:
        self._pools = pools
        self._registry = registry
        self._providers = providers
        self.failures = failures or FailureLog()

    async def view(self, record: PoolRecord, now: float) -> PoolView:
        spec = record.spec
        ids = await self._pools.members(record.name)
        rows = await self._pools.member_rows(ids)
        blocked: list[list[str]] = [[] for _ in ids]
        if spec.quarantine is not None and ids:
            blocked = await self._pools.blocked_targets(ids, now - spec.quarantine.within)
        members = [
            _member(pid, row, targets)
            for pid, row, targets in zip(ids, rows, blocked, strict=True)
            if row[2] is not None
        ]
        self.failures.note(members, now)
        low, high = await self._pools.marks(record.name)
        return PoolView(
            name=record.name,
            spec=spec,
            gen=record.gen,
            desired=record.desired,
            deleting=record.deleting,
            members=members,
            providers=await self._rooms(record, now),
            now=now,
            refused=await self._pools.take_refused(record.name) if not record.deleting else 0,
            low_since=low,
            high_since=high,
            previous=record.status,
        )

    async def _rooms(self, record: PoolRecord, now: float) -> list[ProviderRoom]:
        out = []
        weighted = record.spec.weighted()
        listed = await self._registry.installation.listed([p.name for p in weighted])
        for p in weighted:
            try:
                config = self._providers.get(p.name)
            except KeyError:  # taken out of the config since: nothing goes there
                out.append(ProviderRoom(p.name, p.weight, (), room=0))
                continue
            zones = tuple(z for z in record.spec.zones or config.zones if z in config.zones)
            room = None
            if config.max_proxies is not None:
                counts = await self._registry.count_by_phase(p.name)
                room = config.max_proxies - sum(counts[phase] for phase in HOLDING)
            until, why = self.failures.paused(p.name, now)
            out.append(
                ProviderRoom(
                    p.name, p.weight, zones, room, config.max_proxies, until, why, listed[p.name]
                )
            )
        return out


def _member(pid: str, row: list[str | None], blocked: list[str]) -> Member:
    provider, zone, phase, created, updated, lease, avail, withheld, withheld_at, reason = row
    return Member(
        id=pid,
        provider=provider or "",
        zone=zone or "",
        phase=_PHASES[phase or Phase.DELETED],
        created_at=float(created or 0),
        updated_at=float(updated or 0),
        leased=bool(lease),
        avail_at=float(avail or 0),
        withheld=_WITHHELD[withheld or ""],
        withheld_at=float(withheld_at or 0),
        reason=reason or "",
        blocked_by=frozenset(blocked),
    )
