"""A file of 50 mixed entries (every scheme and line format) reloaded while grants run:
the edit adds, removes (some leased) and breaks lines; no lease is lost, removed proxies
are drained (no new lease) and forgotten once released, the bad lines are reported with
their numbers. Real Redis and NATS; health's good probes are stood in for by the
registry's own transition, and the upstreams are never dialled."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import redis.asyncio as aioredis

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.store import LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import GrantRequest, LeasePolicy
from proxyfleet.common.wire.events import EventType
from proxyfleet.common.wire.models import Lease, Phase, Withheld

from .helpers import wait_for_phase, wait_until
from .static_fixtures import Events, StartStatic, events, line_id, start_static, static_entry

__all__ = ["events", "start_static"]  # fixtures

FORMATS = [
    "http://u{i}:pw-{i}@127.0.0.{h}:{p}",
    "https://u{i}:pw-{i}@127.0.0.{h}:{p}",
    "socks5://u{i}:pw-{i}@127.0.0.{h}:{p}",
    "socks5h://u{i}:pw-{i}@127.0.0.{h}:{p}",
    "127.0.0.{h}:{p}:u{i}:pw-{i}",
    "u{i}:pw-{i}@127.0.0.{h}:{p}",
    "127.0.0.{h}:{p}",
]


def line(i: int) -> str:
    return FORMATS[i % len(FORMATS)].format(i=i, h=10 + i % 5, p=20000 + i)


async def _async(value: bool) -> bool:
    return value


async def test_a_reload_while_grants_run_loses_no_lease(
    start_static: StartStatic,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    events: Events,
    provider_name: str,
    tmp_path: Path,
) -> None:
    path = tmp_path / "mixed.txt"
    first = [line(i) for i in range(50)]
    path.write_text("\n".join(first) + "\n")
    ids = [line_id(provider_name, text) for text in first]
    entry = static_entry(provider_name, f"sources: [{{file: '{path}', refresh: 3600}}]")
    await start_static(entry)
    for proxy_id in ids:
        await wait_for_phase(registry, proxy_id, Phase.BOOTING)
        await registry.transition(proxy_id, Phase.READY, last_ok_at=time.time())
    schemes = {(await registry.get(i)).scheme for i in ids}  # type: ignore[union-attr]
    assert len(schemes) == 4

    leases = LeaseStore(redis_client, SystemClock(), LeasePolicy(cooldown=0.0))
    granted: list[Lease] = []
    active: list[Lease] = []
    stop = asyncio.Event()

    async def grant_forever() -> None:
        """A client holding 15 leases at a time, releasing its oldest for each new one."""
        while not stop.is_set():
            try:
                lease = await leases.grant(GrantRequest(ttl=120, provider=provider_name))
            except Unavailable:
                pass
            else:
                granted.append(lease)
                active.append(lease)
            if len(active) > 15:
                oldest = active.pop(0)
                await leases.release(oldest.id, oldest.epoch)
            await asyncio.sleep(0.01)  # a client's pace, not a synchronisation

    granting = asyncio.create_task(grant_forever())
    await wait_until(lambda: _async(len(granted) >= 20), what="20 leases")
    leased = {lease.proxy_id for lease in active}
    removed = [i for i in ids if i in leased][:4] + [i for i in ids if i not in leased][:6]
    assert len(removed) == 10
    kept_lines = [text for text, i in zip(first, ids, strict=True) if i not in removed]
    broken = ["ftp://x:bad-pw-1@127.0.0.1:1", "127.0.0.1:99999:u:bad-pw-2"]
    added = [line(i) for i in range(50, 55)]
    second = [*kept_lines[:20], broken[0], *kept_lines[20:], broken[1], *added]
    path.write_text("\n".join(second) + "\n")
    os.kill(os.getpid(), signal.SIGHUP)

    async def drained() -> bool:
        proxies = await registry.get_many(removed)
        return all(p is None or p.withheld is Withheld.DRAINING or p.phase in (
            Phase.DELETING, Phase.DELETED) for p in proxies)  # fmt: skip

    await wait_until(drained, what="the removed proxies drained")
    after_drain = len(granted)
    for text in added:
        new_id = line_id(provider_name, text)
        await wait_for_phase(registry, new_id, Phase.BOOTING)
        await registry.transition(new_id, Phase.READY, last_ok_at=time.time())
    await wait_until(lambda: _async(len(granted) >= after_drain + 30), what="30 more leases")
    stop.set()
    await granting
    assert not {lease.proxy_id for lease in granted[after_drain:]} & set(removed)

    rejected = events.of_type(EventType.SOURCE_ENTRY_REJECTED)
    assert sorted((e.data.line, e.data.reason.split(":")[0]) for e in rejected) == [  # type: ignore[union-attr]
        (21, "unknown scheme 'ftp'"),
        (42, "port out of range"),
    ]
    assert not events.of_type(EventType.LEASE_REVOKED)  # no lease lost
    for lease in active:
        await leases.release(lease.id, lease.epoch)
    for proxy_id in removed:
        await wait_for_phase(registry, proxy_id, Phase.DELETED)
    published = b"\n".join(events.raw).decode()
    assert "bad-pw" not in published
    assert "pw-1" not in published
