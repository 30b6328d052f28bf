"""The static provisioner in process with real Redis and NATS: the runner with the static
adapter, and the syncer over a file of real loopback Squids (started by the local
provider's fixture). Health is not part of it: registered proxies are followed to booting.

The file is edited (an entry added, one removed while leased, a broken line) and SIGHUP
applies it: the removed proxy is drained, then forgotten once its lease ends; the others
keep their ids and state; the broken line is reported by its number; no credential
reaches a log line or an event.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.store import LeaseStore, ProxyRegistry
from proxyfleet.common.store.lease_terms import GrantRequest, LeasePolicy
from proxyfleet.common.wire.events import EventType
from proxyfleet.common.wire.models import Phase, ProxySpec, Scheme, Withheld
from proxyfleet.provisioner_local.adapter import LocalProvider

from .helpers import INSTALLATION, connect_status, wait_for_phase, wait_until
from .static_fixtures import Events, StartStatic, events, line_id, start_static, static_entry

__all__ = ["events", "start_static"]  # fixtures


@dataclass(frozen=True)
class Upstream:
    port: int
    user: str
    password: str


async def start_upstreams(local: LocalProvider, count: int) -> list[Upstream]:
    out = []
    for i in range(count):
        spec = ProxySpec(
            proxy_id=f"up{secrets.token_hex(4)}",
            installation_id=INSTALLATION,
            zone="local",
            username=f"user{i}",
            password=f"upstream-{secrets.token_urlsafe(12)}",
        )
        done = await local.create(spec)
        out.append(Upstream(done.port, spec.username, spec.password))
    return out


async def test_a_file_source_is_registered_edited_and_reloaded_on_sighup(
    make_local_provider: Callable[..., LocalProvider],
    tcp_target: int,
    start_static: StartStatic,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    events: Events,
    provider_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    configure_logging("test", "debug", "json")
    caplog.set_level(logging.DEBUG)  # every library logger too, at every level
    local = make_local_provider("auto", connect_ports=(tcp_target,))
    a, b, c, d = await start_upstreams(local, 4)
    broken = "ftp://someone:broken-Secret-1@127.0.0.1:21"
    first = [
        "# bought 2026-12",
        f"http://{a.user}:{a.password}@127.0.0.1:{a.port}",
        f"127.0.0.1:{b.port}:{b.user}:{b.password}",
        f"{c.user}:{c.password}@127.0.0.1:{c.port}",
    ]
    path = tmp_path / "proxies.txt"
    path.write_text("\n".join(first) + "\n")
    entry = static_entry(provider_name, f"sources: [{{file: '{path}', refresh: 3600, name: list}}]")
    lines = zip((a, b, c), first[1:], strict=True)
    ids = {u: line_id(provider_name, line) for u, line in lines}
    await start_static(entry)

    for upstream, proxy_id in ids.items():
        proxy = await wait_for_phase(registry, proxy_id, Phase.BOOTING)
        assert (proxy.scheme, proxy.external, proxy.host, proxy.port) == (
            Scheme.HTTP,
            True,
            "127.0.0.1",
            upstream.port,
        )
        assert (proxy.username, proxy.password) == (upstream.user, upstream.password)
        assert proxy.placement["source"] == "list"
    await wait_until(
        lambda: _async(all(events.types_of(i)[-1:] == ["proxy.booting"] for i in ids.values())),
        what="every booting event",
    )
    assert events.types_of(ids[a]) == ["proxy.pending", "proxy.provisioning", "proxy.booting"]
    proxy_a = await registry.get(ids[a])
    assert proxy_a is not None
    creds = f"{proxy_a.username}:{proxy_a.password}"
    target = f"127.0.0.1:{tcp_target}"
    assert await asyncio.to_thread(connect_status, proxy_a.port, target, creds) == 200

    # C serves a lease (health's good probe stands in for health) when its line goes.
    await registry.transition(ids[c], Phase.READY, last_ok_at=time.time())
    leases = LeaseStore(redis_client, SystemClock(), LeasePolicy())
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id=ids[c]))
    kept = {i: (await registry.get(i)) for i in (ids[a], ids[b])}
    second = [*first[:3], broken, f"http://{d.user}:{d.password}@127.0.0.1:{d.port}"]
    path.write_text("\n".join(second) + "\n")
    os.kill(os.getpid(), signal.SIGHUP)

    added = line_id(provider_name, second[4])
    await wait_for_phase(registry, added, Phase.BOOTING)
    await wait_until(lambda: _withheld(registry, ids[c]), what="the removed proxy drained")
    drained = await registry.get(ids[c])
    assert drained is not None
    assert (drained.phase, drained.lease_id) == (Phase.READY, lease.id)  # its lease runs on
    await wait_until(
        lambda: _async(bool(events.of_type(EventType.SOURCE_ENTRY_REJECTED))),
        what="the broken line reported",
    )
    [rejected] = events.of_type(EventType.SOURCE_ENTRY_REJECTED)
    assert (rejected.provider, rejected.data.source, rejected.data.line) == (
        provider_name,
        "list",
        4,
    )
    assert rejected.data.reason is not None
    assert rejected.data.reason.startswith("unknown scheme 'ftp'")

    await leases.release(lease.id, lease.epoch)
    await wait_for_phase(registry, ids[c], Phase.DELETED)  # forgotten
    await wait_until(
        lambda: _async("proxy.deleted" in events.types_of(ids[c])), what="proxy.deleted"
    )
    phases = [t for t in events.types_of(ids[c]) if t.startswith("proxy.")]
    assert phases[-3:] == ["proxy.drained", "proxy.deleting", "proxy.deleted"]
    for proxy_id, before in kept.items():
        after = await registry.get(proxy_id)
        assert after is not None
        assert before is not None
        assert (after.phase, after.gen) == (before.phase, before.gen)  # state kept
    assert await asyncio.to_thread(connect_status, c.port, target, f"{c.user}:{c.password}") == 200

    # Listed again: it takes over its deleted record at once, its generation going on.
    forgotten = await registry.get(ids[c])
    assert forgotten is not None
    path.write_text("\n".join([*second, first[3]]) + "\n")
    os.kill(os.getpid(), signal.SIGHUP)
    back = await wait_for_phase(registry, ids[c], Phase.BOOTING)
    assert back.gen > forgotten.gen
    assert back.withheld is Withheld.NO

    logged = capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)
    published = b"\n".join(events.raw).decode()
    for secret in (a.password, b.password, c.password, d.password, "broken-Secret-1"):
        assert secret not in logged
        assert secret not in published


async def _async(value: bool) -> bool:
    return value


async def _withheld(registry: ProxyRegistry, proxy_id: str) -> bool:
    proxy = await registry.get(proxy_id)
    return proxy is not None and proxy.withheld is Withheld.DRAINING
