"""Exit addresses through real Squids (each leaving from its own loopback address) and the
dev target, which answers the caller's address: sharing, confirmed changes, flaps, an echo
target that answers garbage, and providers that require an address."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from functools import partial

import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from tests.conftest import TargetServer
from tests.health.conftest import (
    PROVIDER,
    Collector,
    MakeProxy,
    ProxyProcess,
    RunWorker,
    _squid,
    events_of,
)

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import GrantRequest, LeaseStore, ProxyRegistry
from proxyfleet.common.store.egress import AddressCounts, EgressStore
from proxyfleet.common.store.lease_terms import LeasePolicy
from proxyfleet.common.wire.models import Phase, ProbeResult, Proxy
from proxyfleet.health.metrics import EGRESS_ADDRESSES, EGRESS_UNKNOWN_BY_REASON
from proxyfleet.health.prober import INVALID, MISSING, OK, Outcome, Prober
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.worker import HealthWorker

OTHER = "127.0.0.7"
"""The loopback address `squid_other` leaves from (the shared `squid` leaves from 127.0.0.1)."""


@pytest.fixture(scope="session")
def squid_other(target: TargetServer) -> Iterator[ProxyProcess]:
    proxy = _squid([target.port], outgoing=OTHER)
    proxy.start()
    yield proxy
    proxy.kill()
    shutil.rmtree(proxy.workdir, ignore_errors=True)


async def _until(check: Callable[[], Awaitable[bool]], within: float = 8.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def _get(registry: ProxyRegistry, pid: str) -> Proxy:
    proxy = await registry.get(pid)
    assert proxy is not None
    return proxy


def _types(events: Collector, pid: str) -> list[str]:
    return [e.type for e in events_of(events, pid)]


async def test_two_proxies_on_one_address_are_flagged(
    squid: ProxyProcess,
    squid_other: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    events: Collector,
) -> None:
    a = await make_proxy(squid.port)
    b = await make_proxy(squid.port)
    c = await make_proxy(squid_other.port)
    async with run_worker():

        async def flagged() -> bool:
            return all([(await _get(registry, p.id)).egress_shared == 2 for p in (a, b)])

        await _until(flagged)
        await events.wait_for(
            lambda: "proxy.egress_shared" in _types(events, a.id) + _types(events, b.id)
        )
        await _until(lambda: _gauge_is("distinct", 2))
    stored_c = await _get(registry, c.id)
    assert (stored_c.egress_ip, stored_c.egress_net, stored_c.egress_shared) == (
        OTHER,
        "127.0.0.0/24",
        1,
    )
    assert (await _get(registry, a.id)).egress_ip == "127.0.0.1"
    [shared] = [
        e
        for e in events_of(events, a.id) + events_of(events, b.id)
        if e.type == "proxy.egress_shared"
    ]
    assert shared.data.egress_ip == "127.0.0.1"
    assert shared.data.shared_with == [({a.id, b.id} - {shared.proxy_id}).pop()]
    egress = EgressStore(redis_client, SystemClock())
    assert await egress.counts("provider", PROVIDER) == AddressCounts(2, 3, 1)
    assert _gauge("proxies") == 3
    assert _gauge("shared") == 1


def _gauge(kind: str) -> float:
    child = EGRESS_ADDRESSES.labels(group="provider", name=PROVIDER, kind=kind)
    return float(child._value.get())


async def _gauge_is(kind: str, value: float) -> bool:
    return _gauge(kind) == value


async def _leased(
    make_proxy: MakeProxy, squid: ProxyProcess, redis_client: aioredis.Redis
) -> tuple[Proxy, str, LeaseStore]:
    """A ready proxy on `squid` whose confirmed address is 127.0.0.1, leased."""
    proxy = await make_proxy(squid.port, phase=Phase.READY)
    await EgressStore(redis_client, SystemClock()).confirm(proxy.id, "127.0.0.1")
    leases = LeaseStore(redis_client, SystemClock(), LeasePolicy(cooldown=0))
    lease = await leases.grant(GrantRequest(ttl=60, proxy_id=proxy.id, client="crawler"))
    return proxy, lease.id, leases


async def _state(leases: LeaseStore, lease_id: str) -> tuple[str, str]:
    got = await leases.get(lease_id)
    assert got is not None
    return got[1], got[0].reason


def _seen(results: Collector, pid: str, ip: str) -> int:
    return sum(r.proxy_id == pid and r.egress_ip == ip for r in results.items)


def _seen_more(results: Collector, pid: str, ip: str, before: int) -> bool:
    return _seen(results, pid, ip) > before


@pytest.mark.parametrize("revoke", [True, False])
async def test_a_change_confirmed_after_n_probes_is_announced_and_revokes_the_lease(
    revoke: bool,
    squid: ProxyProcess,
    squid_other: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    events: Collector,
    probe_results: Collector,
) -> None:
    proxy, lease_id, leases = await _leased(make_proxy, squid, redis_client)
    await registry.update(proxy.id, port=squid_other.port)  # its exit moves to OTHER
    async with run_worker(egress_confirm_after=3, revoke_on_egress_change=revoke):
        await events.wait_for(lambda: "proxy.egress_changed" in _types(events, proxy.id))
        assert _seen(probe_results, proxy.id, OTHER) >= 3
    [changed] = [e for e in events_of(events, proxy.id) if e.type == "proxy.egress_changed"]
    assert (changed.data.from_egress_ip, changed.data.egress_ip) == ("127.0.0.1", OTHER)
    stored = await _get(registry, proxy.id)
    assert (stored.egress_ip, stored.egress_pending, stored.egress_pending_n) == (OTHER, "", 0)
    assert stored.phase is Phase.READY
    if revoke:
        assert await _state(leases, lease_id) == ("revoked", "egress_changed")
        revoked = [e for e in events.items if e.type == "lease.revoked" and e.lease_id == lease_id]
        assert [e.data.reason for e in revoked] == ["egress_changed"]
    else:
        assert await _state(leases, lease_id) == ("active", "")


async def test_an_address_flapping_between_two_values_never_revokes(
    squid: ProxyProcess,
    squid_other: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    events: Collector,
    probe_results: Collector,
) -> None:
    proxy, lease_id, leases = await _leased(make_proxy, squid, redis_client)
    async with run_worker(egress_confirm_after=3):
        for _ in range(4):  # A, B, A, B, ...: each switch waits until a probe saw it
            for port, ip in ((squid_other.port, OTHER), (squid.port, "127.0.0.1")):
                seen = _seen(probe_results, proxy.id, ip)
                await registry.update(proxy.id, port=port)
                await probe_results.wait_for(partial(_seen_more, probe_results, proxy.id, ip, seen))
    assert _seen(probe_results, proxy.id, OTHER) >= 4
    assert "proxy.egress_changed" not in _types(events, proxy.id)
    assert await _state(leases, lease_id) == ("active", "")
    assert (await _get(registry, proxy.id)).egress_ip == "127.0.0.1"


# ---- an echo target of the test's own: garbage, no address ---------------------------------


class ScriptedEcho:
    """A plain-HTTP target on 127.0.0.1 answering every request with `body` (JSON)."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.port = 0
        self.answered = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + self.body)
            await writer.drain()
            self.answered += 1
        writer.close()


@pytest.fixture
async def echo() -> AsyncIterator[ScriptedEcho]:
    scripted = ScriptedEcho()
    server = await asyncio.start_server(scripted._serve, "127.0.0.1", 0)
    scripted.port = server.sockets[0].getsockname()[1]
    yield scripted
    server.close()
    await server.wait_closed()


@pytest.fixture
def echo_squid(echo: ScriptedEcho) -> Iterator[ProxyProcess]:
    proxy = _squid([echo.port])
    proxy.start()
    yield proxy
    proxy.kill()
    shutil.rmtree(proxy.workdir, ignore_errors=True)


async def test_garbage_or_no_address_raises_the_metric_and_changes_nothing(
    echo: ScriptedEcho,
    echo_squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    run_worker: RunWorker,
    events: Collector,
) -> None:
    fresh = await make_proxy(echo_squid.port)
    known = await make_proxy(echo_squid.port, phase=Phase.READY)
    await EgressStore(redis_client, SystemClock()).confirm(known.id, "127.0.0.1")
    invalid, missing = EGRESS_UNKNOWN_BY_REASON[INVALID], EGRESS_UNKNOWN_BY_REASON[MISSING]
    invalid_before, missing_before = invalid._value.get(), missing._value.get()
    echo.body = b'{"ip": "not-an-address"}'
    async with run_worker(target=f"http://127.0.0.1:{echo.port}/echo"):
        await _until(lambda: _above(invalid._value.get(), invalid_before + 3))
        echo.body = b'{"ok": true}'
        await _until(lambda: _above(missing._value.get(), missing_before + 3))
    stored = await _get(registry, fresh.id)
    assert stored.phase is Phase.READY  # the probes still count for health
    assert (stored.egress_ip, stored.egress_pending) == ("", "")
    assert (await _get(registry, known.id)).egress_ip == "127.0.0.1"
    assert not [t for t in _types(events, known.id) if t.startswith("proxy.egress")]


async def _above(value: float, at_least: float) -> bool:
    return value >= at_least


async def test_require_ip_keeps_a_proxy_out_of_ready_until_its_address_is_known(
    echo: ScriptedEcho,
    echo_squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
) -> None:
    waiting = await make_proxy(echo_squid.port)
    never = await make_proxy(echo_squid.port, boot_timeout=1.0)
    echo.body = b'{"ok": true}'
    target = f"http://127.0.0.1:{echo.port}/echo"
    async with run_worker(target=target, require_ip=(PROVIDER,)):

        async def never_failed() -> bool:
            return (await _get(registry, never.id)).phase is Phase.FAILED

        await _until(never_failed)
        stored = await _get(registry, waiting.id)
        assert stored.phase is Phase.BOOTING
        assert stored.ok_streak >= 2
        echo.body = b'{"ip": "127.0.0.1"}'

        async def ready() -> bool:
            return (await _get(registry, waiting.id)).phase is Phase.READY

        await _until(ready)
    failed = await _get(registry, never.id)
    assert "exit address unknown" in failed.reason
    assert (await _get(registry, waiting.id)).egress_ip == "127.0.0.1"


# ---- the probe write path ------------------------------------------------------------------


async def _commands(redis_client: aioredis.Redis) -> dict[str, int]:
    stats = await redis_client.info("commandstats")
    return {name: int(v["calls"]) for name, v in stats.items() if name != "cmdstat_info"}


async def test_an_unchanged_address_adds_no_command_to_the_probe_write(
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    nc: NatsClient,
    prober: Prober,
    health_settings: HealthSettings,
) -> None:
    """A batch of probes whose addresses did not change costs what it cost before exit
    addresses: one streak update per proxy, pipelined (one round trip); the egress script
    runs only for the proxy whose new address is confirmed, in place of its update."""
    clock = SystemClock()
    egress = EgressStore(redis_client, clock)
    worker = HealthWorker(
        replace(health_settings, egress_confirm_after=1),
        registry=registry,
        egress=egress,
        nc=nc,
        prober=prober,
        clock=clock,
    )
    proxies = []
    for i in range(20):
        made = await make_proxy(1, phase=Phase.READY)  # never probed: no worker runs
        await egress.confirm(made.id, f"127.0.1.{i}")
        proxies.append(await _get(registry, made.id))

    def batch(ip: str | None = None, moved: str = "") -> list[tuple[Proxy, Outcome]]:
        """Each proxy's probe seeing `ip` (None: its own address), the first one `moved`."""
        out = []
        for i, p in enumerate(proxies):
            seen = p.egress_ip if ip is None else ip
            out.append((p, _ok(p.id, moved if moved and i == 0 else seen)))
        return out

    async def cost(probes: list[tuple[Proxy, Outcome]]) -> dict[str, int]:
        """The commands Redis ran for one batch (a script's own commands counted too)."""
        before = await _commands(redis_client)
        await worker.record_many(probes)
        after = await _commands(redis_client)
        return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}

    await worker.record_many(batch())  # loads the scripts
    without_address = await cost(batch(ip=""))  # what a probe cost before exit addresses
    unchanged = await cost(batch())
    assert unchanged == without_address
    assert unchanged["cmdstat_evalsha"] == 20  # one pipelined update each: one round trip

    moved = await cost(batch(moved="127.0.2.1"))
    assert (await _get(registry, proxies[0].id)).egress_ip == "127.0.2.1"
    assert moved["cmdstat_evalsha"] == 20  # 19 updates and the egress script in its place


def _ok(pid: str, ip: str) -> Outcome:
    return Outcome(
        ProbeResult(proxy_id=pid, time=time.time(), ok=True, latency_ms=1.0, egress_ip=ip), OK
    )
