"""The system the fault suite breaks: its own NATS and Redis (tests/faults/servers.py), the
dev stack's services and real local proxies; and what the audit reads back: leases, the
event stream, the registry, the provider's resources, the logs."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from tests.faults.audit import StreamEvent
from tests.faults.outbox import OutboxProbe
from tests.faults.servers import Restartable, stop_group
from tests.faults.stream_events import read_events

from proxyfleet.devstack.nats_cluster import NatsCluster, start_nats_cluster
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import stop_local_proxies
from proxyfleet.devstack.sentinel import SentinelGroup, start_sentinel_group
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack


def auth(token: str) -> dict[str, str]:
    """The one place the suite turns a token (its secret) into a header."""
    return {"Authorization": f"Bearer {token}"}


class FaultStack(Stack):
    """The dev stack with a second client token: the suite checks one client cannot touch
    another's lease."""

    other_client_token: str = ""
    """The second client's secret (what it sends); configured as `faults-b:<secret>`."""
    stream_replicas: int = 1
    """Every service declares the streams with this many copies (3 on a NATS cluster)."""
    redis_wait_replicas: int = 0
    """Writes acknowledged once this many replicas hold them (1 behind Sentinel)."""

    def service_env(self) -> dict[str, str]:
        env = super().service_env()
        if not self.other_client_token:
            self.other_client_token = secrets.token_urlsafe(18)
        env["PROXYFLEET_API_CLIENT_TOKENS"] += ",faults-b:" + self.other_client_token
        env["PROXYFLEET_STREAM_REPLICAS"] = str(self.stream_replicas)
        if self.redis_wait_replicas:
            env["PROXYFLEET_REDIS_WAIT_REPLICAS"] = str(self.redis_wait_replicas)
            env["PROXYFLEET_REDIS_WAIT_TIMEOUT"] = "0.5"  # a loaded machine syncs late
        return env


class Fleet:
    """The whole system for the fault suite; `close()` stops everything it started."""

    def __init__(
        self,
        proxies: int,
        cooldown: float = 0.2,
        health_interval: float = 0.5,
        nats_nodes: int = 1,
        sentinel: bool = False,
    ) -> None:
        """`nats_nodes` > 1: a NATS cluster of that many servers (`cluster`), the streams
        replicated on each, instead of the one restartable server `nats`. `sentinel`: Redis
        as a primary, two replicas and three Sentinels (`sentinels`) instead of `redis`."""
        # Squid drops to user `proxy` as root: the folders on the way must be traversable.
        self.base = Path(tempfile.mkdtemp(prefix="proxyfleet-faults-"))
        self.base.chmod(0o711)
        (self.base / "logs").mkdir()
        self.nats = Restartable("nats", self.base / "nats", self.base / "logs" / "nats.log")
        self.redis = Restartable("redis", self.base / "redis", self.base / "logs" / "redis.log")
        self.outbox = OutboxProbe(self.redis.url)
        self.proxy_count = proxies
        self.nats_nodes = nats_nodes
        self.cluster: NatsCluster | None = None
        self.use_sentinel = sentinel
        self.sentinels: SentinelGroup | None = None
        self.passwords: set[str] = set()
        """Proxy passwords the loads were granted: no log may hold one."""
        self.deleted: set[str] = set()
        """Proxies a fault deleted on purpose, in any window so far: a delete asked for in
        one window (NATS down) may finish in the next."""
        self.stack = FaultStack(
            StackOptions.on_free_ports(
                base_dir=self.base,
                health_interval=health_interval,
                gc_interval=1.0,
                gc_min_age=3.0,
                cooldown=cooldown,
                boot_timeout=20.0,
                echo=None,
                installation_id="faults",
                extra_args={
                    "provisioner": [
                        *("--ack-wait", "3", "--stale-after", "3"),
                        *("--reconcile-interval", "1"),
                        # no lease outlives 10 s, so an adopted proxy waits that long
                        *("--adopt-hold", "10"),
                    ],
                    "api": [
                        *("--sweep-interval", "0.5"),
                        *("--max-lease-ttl", "10", "--default-lease-ttl", "10"),
                    ],
                },
            )
        )

    # ---- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        if self.nats_nodes > 1:
            self.cluster = start_nats_cluster(self.base / "nats-cluster", self.nats_nodes)
            self.stack.stream_replicas = self.nats_nodes
        else:
            self.nats.start()
        if self.use_sentinel:
            # Two replicas: after a failover the new primary still has one to confirm
            # writes (tests/common/test_failover_grants.py).
            self.sentinels = start_sentinel_group(self.base / "sentinel", replicas=2)
            self.stack.redis_wait_replicas = 1
            self.outbox = OutboxProbe(self.sentinels.url)
        else:
            self.redis.start()
        self.stack.opts.nats_url, self.stack.opts.redis_url = self.nats_url, self.redis_url
        self.stack.start()
        self.admin = httpx.Client(
            base_url=self.stack.api_url, headers=auth(self.stack.admin_token), timeout=30
        )
        self.client = httpx.Client(
            base_url=self.stack.api_url, headers=auth(self.stack.client_token), timeout=10
        )
        r = self.admin.post("/v1/proxies", json={"provider": "local", "count": self.proxy_count})
        assert r.status_code == 202, r.text
        self.wait(
            f"{self.proxy_count} ready proxies", lambda: self.ready_count() >= self.proxy_count, 60
        )

    def close(self) -> None:
        try:
            self.stack.stop()
        finally:
            # Redis is not the stack's own, so it leaves the proxies: stop them here.
            stop_local_proxies(self.base / "local-proxies")
            self.nats.stop()
            if self.cluster is not None:
                self.cluster.stop()
            self.redis.stop()
            if self.sentinels is not None:
                self.sentinels.stop()
            if not os.environ.get("PROXYFLEET_FAULTS_KEEP"):
                shutil.rmtree(self.base, ignore_errors=True)

    @property
    def nats_url(self) -> str:
        """What the services are given: the cluster's URLs, comma-separated, or the one."""
        return self.cluster.url if self.cluster is not None else self.nats.url

    @property
    def redis_url(self) -> str:
        """What the services are given: the Sentinels' redis+sentinel:// URL, or the one."""
        return self.sentinels.url if self.sentinels is not None else self.redis.url

    @property
    def state_dir(self) -> Path:
        return self.base / "local-proxies" / self.stack.opts.installation_id

    def ready_url(self, service: str) -> str:
        if service.startswith("api"):
            port = self.stack.commands[service][self.stack.commands[service].index("--port") + 1]
        else:
            args = self.stack.commands[service]
            port = args[args.index("--metrics-port") + 1]
        return f"http://127.0.0.1:{port}/readyz"

    def is_ready(self, service: str) -> bool:
        try:
            return httpx.get(self.ready_url(service), timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill9(self, service: str) -> None:
        proc = self.stack.processes[service]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def restart(self, service: str) -> None:
        self.stack.start_service(service, self.stack.commands[service])

    def start_second_api(self) -> str:
        args = list(self.stack.commands["api"])
        port = str(free_port())
        args[args.index("--port") + 1] = port
        self.stack.commands["api2"] = args
        self.stack.start_service("api2", args)
        self.wait("the second API ready", lambda: self.is_ready("api2"), 30)
        return f"http://127.0.0.1:{port}"

    def stop_service(self, service: str) -> None:
        proc = self.stack.processes.pop(service)
        stop_group(proc)

    @staticmethod
    def wait(what: str, check: Any, timeout: float) -> float:
        """Seconds until check() holds; AssertionError past the timeout."""
        t0 = time.monotonic()
        while not check():
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.1)
        return time.monotonic() - t0

    @staticmethod
    def wait_quietly(check: Any, timeout: float) -> bool:
        """Whether check() came to hold within timeout."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    # ---- observations ---------------------------------------------------------------

    def registry(self) -> dict[str, dict[str, Any]]:
        """Every proxy the API knows, deleted ones included, by id ({} when it cannot
        answer): the lifecycle audit compares every proxy's gen with its events."""
        try:
            r = self.admin.get("/v1/proxies", params={"limit": "500", "include_deleted": "true"})
        except httpx.HTTPError:
            return {}
        if r.status_code != 200:
            return {}
        return {p["id"]: p for p in r.json()["items"]}

    def ready_count(self) -> int:
        return sum(1 for p in self.registry().values() if p["phase"] == "ready")

    def lease_states(self, lease_ids: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        deadline = time.monotonic() + 30  # a 503 right after an outage: ask again
        for lease_id in lease_ids:
            while True:
                r = self.client.get(f"/v1/leases/{lease_id}")
                if r.status_code in (200, 404) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if r.status_code not in (200, 404):
                raise AssertionError(f"GET lease {lease_id}: {r.status_code} {r.text}")
            out[lease_id] = r.json()["state"] if r.status_code == 200 else None
        return out

    def secrets(self) -> set[str]:
        s = self.stack
        return {s.admin_token, s.client_token, s.other_client_token, *self.passwords}

    def resources(self) -> dict[str, int]:
        """Live proxy processes per proxy id the local provider has a folder for."""
        ids = [p.name for p in self.state_dir.iterdir()] if self.state_dir.exists() else []
        counts = dict.fromkeys(ids, 0)
        mentions: dict[int, tuple[int, str]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            for pid_ in ids:
                if pid_ in cmdline:
                    mentions[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), pid_)
        # Top-level processes only: Squid's workers and helpers have a parent mentioning it.
        for parent, proxy_id in mentions.values():
            if parent not in mentions:
                counts[proxy_id] += 1
        return counts

    def events(self) -> list[StreamEvent]:
        return asyncio.run(read_events(self.nats_url))

    def logs_with(self, secrets: set[str]) -> list[str]:
        """Log files (of every service, NATS and Redis) holding one of `secrets`."""
        found = []
        for log in sorted((self.base / "logs").glob("*.log")):
            text = log.read_text(errors="replace")
            found += [f"{log.name}: {s[:4]}..." for s in secrets if s and s in text]
        return found
