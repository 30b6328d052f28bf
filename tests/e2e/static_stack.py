"""The whole system with one static provider (`byo`) reading a file of proxy lines: every
service as a process over real NATS and Redis, the static provisioner beside them, health
and the gateway given the https upstreams' CA bundle. Also what the journey reads from it:
events as published, the provisioner's metrics, every service's log."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis
from nats.aio.msg import Msg
from tests.e2e.journey import ThreadedSubscriber
from tests.e2e.provider_stack import running

from proxyfleet.devstack.commands import service_bin
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack

PROVIDER = "byo"
ZONE = "byo-a"
SOURCE = "pasted"
PROVISIONER = "provisioner-byo"
HEALTH_INTERVAL = 1.0


def static_provider_yaml(listing: Path) -> str:
    """The `byo` entry: the file read on SIGHUP (its refresh is longer than any run), each
    proxy ready only once health knows its exit address."""
    return f"""  - name: {PROVIDER}
    type: static
    zones: [{ZONE}]
    boot_timeout: 30
    egress: {{require_ip: true}}
    static:
      sources: [{{file: '{listing}', refresh: 3600, name: {SOURCE}}}]
"""


@contextmanager
def static_stack(
    nats_url: str, redis_url: str, db: int, listing: Path, ca_bundle: str
) -> Iterator[tuple[Stack, int]]:
    """(the started stack, its static provisioner's metrics port), on Redis database `db`
    (emptied first); `ca_bundle` verifies the https upstreams for health and the gateway."""
    base = Path(tempfile.mkdtemp(prefix="proxyfleet-static-"))
    base.chmod(0o711)  # Squid run as root drops to `proxy`: the path must be traversable
    own_redis = redis_url.rsplit("/", 1)[0] + f"/{db}"
    with redis.Redis.from_url(own_redis) as r:
        r.flushdb()
    metrics_port = free_port()
    debug = ["--log-level", "debug"]  # the credential scan reads the chattiest logs
    opts = StackOptions.on_free_ports(
        base_dir=base,
        nats_url=nats_url,
        redis_url=own_redis,
        health_interval=HEALTH_INTERVAL,
        gc_interval=1.0,
        gc_min_age=3.0,
        cooldown=0.5,
        boot_timeout=30.0,
        echo=None,
        installation_id=f"static-e2e-{db}",
        extra_providers=static_provider_yaml(listing),
        extra_services={
            PROVISIONER: [
                service_bin("proxyfleet-provisioner-static"),
                "--provider",
                PROVIDER,
                "--metrics-port",
                str(metrics_port),
                "--sync-interval",
                "0.2",
                *debug,
            ]
        },
        extra_args={
            "api": ["--sweep-interval", "0.5"],
            "health": ["--proxy-ca-bundle", ca_bundle, *debug],
            "gateway": ["--upstream-ca-bundle", ca_bundle, *debug],
        },
    )
    with running(opts, PROVISIONER, metrics_port) as s:
        yield s, metrics_port


class Events(ThreadedSubscriber):
    """Every event published (its decoded body), from entering on."""

    def __init__(self, url: str) -> None:
        super().__init__(url, "proxyfleet.events.>")
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    def record(self, msg: Msg) -> None:
        self.raw.append(msg.data)
        self.bodies.append(json.loads(msg.data))

    def all(self) -> list[dict[str, Any]]:
        """The bodies so far, in the order received."""
        with self._lock:
            return list(self.bodies)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [b for b in self.all() if b.get("type") == kind]

    def published(self) -> bytes:
        with self._lock:
            return b"\n".join(self.raw)


def metric_lines(port: int, name: str) -> list[str]:
    """The samples of metric `name` on the /metrics page at `port`."""
    page = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return [line for line in page.splitlines() if line.startswith(name + "{")]


def log_files(stack: Stack) -> dict[str, str]:
    """Every service's log file (and each upstream-free server's), by name."""
    logs = stack.opts.base_dir / "logs"
    return {p.name: p.read_text(errors="replace") for p in sorted(logs.glob("*.log"))}
