"""The system the pool scenarios run on: the dev stack's processes (two `proxyfleet-pools`
replicas), real local Squids, and a Redis of its own without persistence (so a scenario can
reset it); and what they read back from Redis: a pool's members, status and lock."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import httpx
import redis
from tests.faults.harness import auth
from tests.faults.servers import Restartable, stop_group

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec
from proxyfleet.common.store import PoolStore, connect_redis
from proxyfleet.common.wire.models import Withheld
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import stop_local_proxies
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack

NS = "pf"
INSTALLATION = "pools-e2e"
POOLS_INTERVAL = 0.5
REPLICAS = ("pools", "pools2")
CONFIG_POOL = "cfg"
CONFIG_POOL_SIZE = 3
EXTRA_CONFIG = f"""
pools:
  {CONFIG_POOL}:
    provider: local
    size: {CONFIG_POOL_SIZE}
"""
_FIELDS = ("phase", "withheld", "lease_id", "avail_at", "created_at", "withheld_at", "pool")
T = TypeVar("T")


@dataclass(frozen=True)
class Member:
    id: str
    phase: str
    withheld: str
    leased: bool
    avail_at: float
    created_at: float
    withheld_at: float

    @property
    def live(self) -> bool:
        """Counts toward the pool: not on its way out (deleting, deleted, failed)."""
        return self.phase not in ("deleting", "deleted", "failed")

    @property
    def in_rotation(self) -> bool:
        return self.phase == "ready" and not self.withheld

    def free(self, now: float) -> bool:
        return self.in_rotation and not self.leased and self.avail_at <= now


class PoolFleet:
    """The whole system; `close()` stops everything it started."""

    def __init__(self, nats_url: str) -> None:
        # Squid drops to user `proxy` as root: the folders on the way must be traversable.
        self.base = Path(tempfile.mkdtemp(prefix="proxyfleet-pools-e2e-"))
        self.base.chmod(0o711)
        (self.base / "logs").mkdir()
        self.redis = Restartable(
            "redis", self.base / "redis", self.base / "logs" / "redis.log", persist=False
        )
        self.stack = Stack(
            StackOptions.on_free_ports(
                base_dir=self.base,
                nats_url=nats_url,
                health_interval=0.5,
                gc_interval=1.0,
                gc_min_age=3.0,
                pools_interval=POOLS_INTERVAL,
                cooldown=0.2,
                boot_timeout=20.0,
                echo=None,
                installation_id=INSTALLATION,
                extra_config=EXTRA_CONFIG,
                extra_args={
                    "provisioner": [
                        *("--ack-wait", "3", "--stale-after", "3", "--reconcile-interval", "1"),
                        *("--supervise-interval", "0.5", "--adopt-hold", "1"),
                    ],
                    "api": ["--sweep-interval", "0.5"],
                    # a pool fills only once re-adoption had its pass (1 s apart)
                    "pools": ["--lock-ttl", "2"],
                },
            )
        )

    def start(self) -> None:
        self.redis.start()
        self.stack.opts.redis_url = self.redis.url
        self.stack.start()
        second = list(self.stack.commands["pools"])
        second[second.index("--metrics-port") + 1] = str(free_port())
        self.stack.commands["pools2"] = second
        self.stack.start_service("pools2", self.stack.commands["pools2"])
        self.admin = httpx.Client(
            base_url=self.stack.api_url, headers=auth(self.stack.admin_token), timeout=30
        )
        self.client = httpx.Client(
            base_url=self.stack.api_url, headers=auth(self.stack.client_token), timeout=10
        )
        self.r = redis.Redis.from_url(self.redis.url, decode_responses=True, socket_timeout=5)

    def close(self) -> None:
        try:
            self.stack.stop()
        finally:
            stop_local_proxies(self.base / "local-proxies")
            self.redis.stop()
            for log in sorted((self.base / "logs").glob("*.log")):
                tail = log.read_text(errors="replace").splitlines()[-12:]
                print(f"---- {log.name} (last lines)\n" + "\n".join(tail))
            if not os.environ.get("PROXYFLEET_POOLS_E2E_KEEP"):
                shutil.rmtree(self.base, ignore_errors=True)

    # ---- pools, through the store ------------------------------------------------------

    def store(self, op: Callable[[PoolStore], Coroutine[Any, Any, T]]) -> T:
        """Run one PoolStore call on a client of its own (the tests' threads are sync)."""

        async def go() -> T:
            client = connect_redis(self.redis.url)
            try:
                return await op(PoolStore(client, SystemClock(), namespace=NS))
            finally:
                await client.aclose()

        return asyncio.run(go())

    def apply(self, name: str, spec: PoolSpec) -> None:
        self.store(lambda s: s.apply(name, spec, Owner.API))

    def delete_pool(self, name: str) -> None:
        self.store(lambda s: s.delete(name, Owner.API))

    def release_quarantined(self, proxy_id: str) -> bool:
        return self.store(lambda s: s.withhold(proxy_id, Withheld.NO, actor="e2e"))

    def ensure(self, name: str, spec: PoolSpec, timeout: float = 60) -> float:
        """Declare the pool (again) and wait until it is settled: `size` members, all ready
        in rotation. Not merely `size` ready: a surplus an earlier scenario left (members
        re-adopted after a Redis reset) would count in this scenario's figures."""
        self.apply(name, spec)
        size = spec.size or 0
        return self.wait(
            f"pool {name}: {size} members, all ready", lambda: self.settled(name, size), timeout
        )

    def settled(self, pool: str, size: int) -> bool:
        """Exactly `size` live members, every one ready in rotation (one read of the pool)."""
        members = self.members(pool)
        live = sum(1 for m in members if m.live)
        return live == size and sum(1 for m in members if m.in_rotation) == size

    # ---- what Redis says -----------------------------------------------------------------

    def members(self, pool: str) -> list[Member]:
        """The pool's members (every proxy not deleted that names the pool)."""
        ids = cast(list[str], self.r.zrange(f"{NS}:pool_members:{pool}", 0, -1))
        with self.r.pipeline(transaction=False) as pipe:
            for i in ids:
                pipe.hmget(f"{NS}:proxy:{i}", _FIELDS)
            rows = cast(list[list[str | None]], pipe.execute())
        return [_member(i, row) for i, row in zip(ids, rows, strict=True) if row[0]]

    def ready_in_rotation(self, pool: str) -> int:
        return sum(1 for m in self.members(pool) if m.in_rotation)

    def live(self, pool: str) -> set[str]:
        return {m.id for m in self.members(pool) if m.live}

    def serves_again(self, proxy_id: str, old_pid: int, since: float) -> bool:
        """Ready on another Squid than `old_pid`, with a good probe after `since`."""
        p = self.proxy(proxy_id)
        return (
            p.get("phase") == "ready"
            and float(p.get("last_ok_at") or 0) > since
            and self.squid_pid(proxy_id) != old_pid
        )

    def grant_and_release(self, body: dict[str, object]) -> str:
        """One short lease through the API: the proxy it got ('' when refused)."""
        r = self.client.post("/v1/leases", json={"ttl": 30, **body})
        if r.status_code != 201:
            return ""
        got = r.json()
        self.client.post(f"/v1/leases/{got['lease_id']}/release", json={"epoch": got["epoch"]})
        return str(got["proxy"]["id"])

    def proxy(self, proxy_id: str) -> dict[str, str]:
        return cast(dict[str, str], self.r.hgetall(f"{NS}:proxy:{proxy_id}"))

    def status(self, pool: str) -> dict[str, Any]:
        raw = cast(str | None, self.r.get(f"{NS}:pool_status:{pool}"))
        return cast(dict[str, Any], json.loads(raw)) if raw else {}

    def record(self, pool: str) -> dict[str, str]:
        return cast(dict[str, str], self.r.hgetall(f"{NS}:pool:{pool}"))

    def ever_in_pool(self, pool: str) -> dict[str, dict[str, str]]:
        """Every proxy the registry holds that was a member, deleted ones included (their
        hash outlives them by a day)."""
        out = {}
        for key in self.r.scan_iter(f"{NS}:proxy:*", count=1000):
            row = cast(dict[str, str], self.r.hgetall(key))
            if row.get("pool") == pool:
                out[key.rsplit(":", 1)[1]] = row
        return out

    def lock_holder(self, pool: str) -> str:
        return cast(str | None, self.r.get(f"{NS}:lock:pool:{pool}")) or ""

    # ---- processes -----------------------------------------------------------------------

    def squid_pid(self, proxy_id: str) -> int:
        marker = self.base / "local-proxies" / INSTALLATION / proxy_id / "managed.json"
        return int(json.loads(marker.read_text())["pid"])

    def replica_of(self, token: str) -> str:
        """Which of REPLICAS a lock token names (`pools-<host>-<pid>-<hex>`)."""
        pid = int(token.rsplit("-", 2)[1])
        return next(n for n in REPLICAS if self.stack.processes[n].pid == pid)

    def kill9(self, service: str) -> None:
        proc = self.stack.processes[service]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def restart(self, service: str) -> None:
        self.stack.start_service(service, self.stack.commands[service])

    def stop_service(self, service: str) -> None:
        stop_group(self.stack.processes[service])

    def passes(self, pool: str, count: int, timeout: float = 20) -> None:
        """Wait until the pool's status was written `count` more times (that many passes)."""
        seen = [self.status(pool).get("updated_at")]

        def moved() -> bool:
            now = self.status(pool).get("updated_at")
            if now != seen[-1]:
                seen.append(now)
            return len(seen) > count

        self.wait(f"{count} passes over pool {pool}", moved, timeout)

    @staticmethod
    def wait(what: str, check: Callable[[], object], timeout: float) -> float:
        """Seconds until check() holds; AssertionError past the timeout."""
        t0 = time.monotonic()
        while not check():
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.1)
        return time.monotonic() - t0


def figure(scenario: str, text: str) -> None:
    """A scenario's figures, on stdout (`pytest -s` shows them)."""
    print(f"pools-e2e | {scenario}: {text}")


def _member(pid: str, row: list[str | None]) -> Member:
    phase, withheld, lease, avail, created, withheld_at, _pool = row
    return Member(
        id=pid,
        phase=phase or "",
        withheld=withheld or "",
        leased=bool(lease),
        avail_at=float(avail or 0),
        created_at=float(created or 0),
        withheld_at=float(withheld_at or 0),
    )
