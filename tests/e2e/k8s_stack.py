"""The whole system with a Kubernetes provider: every service as a process
(provisioner-k8s included) over real NATS and Redis, talking to the fake API server in this
process through a kubeconfig file it writes; the fake's kubelet runs a real Squid per pod."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import redis
from nats.aio.msg import Msg
from tests.e2e.journey import ThreadedSubscriber, wait_for
from tests.e2e.provider_stack import ready, running

from proxyfleet.devstack.commands import service_bin
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack

PROVIDER = "cluster"
NAMESPACE = "proxies"
RESOURCES = ("pods", "secrets", "configmaps", "services")
"""What provisioner-k8s makes per proxy (a Service only when expose is not pod_ip)."""


def k8s_provider_yaml(kubeconfig: Path, target_port: int, expose: str, extra: str) -> str:
    return f"""  - name: {PROVIDER}
    type: kubernetes
    zones: [default]
    boot_timeout: 30
    kubernetes:
      namespace: {NAMESPACE}
      kubeconfig: {kubeconfig}
      expose: {expose}
      source_ranges: [127.0.0.0/8]
      connect_ports: [443, {target_port}]
{extra}"""


@contextmanager
def k8s_stack(
    fake: Any,
    nats_url: str,
    redis_url: str,
    db: int,
    *,
    expose: str = "pod_ip",
    extra_yaml: str = "",
    extra_args: list[str] | None = None,
    replicas: int = 1,
) -> Iterator[Stack]:
    """A started stack whose `cluster` provider is the fake at `fake` (a FakeKube), on
    Redis database `db` (emptied first: leftovers of another test must not be granted),
    with `replicas` provisioner-k8s processes (services provisioner-k8s,
    provisioner-k8s-2, ...)."""
    base = Path(tempfile.mkdtemp(prefix="proxyfleet-k8s-"))
    base.chmod(0o711)  # Squid run as root drops to `proxy`: the path must be traversable
    kubeconfig = fake.write_kubeconfig(base / "kubeconfig", namespace=NAMESPACE)
    target_port = free_port()
    metrics_ports = [free_port() for _ in range(replicas)]
    own_redis = redis_url.rsplit("/", 1)[0] + f"/{db}"
    with redis.Redis.from_url(own_redis) as r:
        r.flushdb()
    opts = StackOptions.on_free_ports(
        base_dir=base,
        nats_url=nats_url,
        redis_url=own_redis,
        health_interval=0.5,
        gc_interval=1.0,
        gc_min_age=3.0,
        cooldown=1.0,
        boot_timeout=30.0,
        echo=None,
        installation_id=f"k8s-e2e-{db}",
        target_port=target_port,
        extra_providers=k8s_provider_yaml(kubeconfig, target_port, expose, extra_yaml),
        extra_services={
            replica_name(i): provisioner_command(port, extra_args)
            for i, port in enumerate(metrics_ports)
        },
        extra_args={"api": ["--sweep-interval", "0.5"]},
    )
    with running(opts, "provisioner-k8s", metrics_ports[0]) as s:
        for port in metrics_ports[1:]:
            url = _readyz(port)
            wait_for("another provisioner-k8s ready", partial(ready, url), timeout=90)
        yield s


def replica_name(i: int) -> str:
    return "provisioner-k8s" if i == 0 else f"provisioner-k8s-{i + 1}"


def _readyz(port: int) -> str:
    return f"http://127.0.0.1:{port}/readyz"


def provisioner_command(port: int, extra_args: list[str] | None) -> list[str]:
    return [
        service_bin("proxyfleet-provisioner-k8s"),
        "--provider",
        PROVIDER,
        "--metrics-port",
        str(port),
        "--reconcile-interval",
        "1",
        "--failure-check-interval",
        "1",
        # Short on purpose: the sweeper must never take a create's own objects
        # whatever the minimum age (it lists the pods after them).
        "--sweep-min-age",
        "1",
        "--sweep-interval",
        "1",
        "--log-level",
        "debug",
        *(extra_args or []),
    ]


def pod_name(proxy_id: str) -> str:
    return f"pf-{proxy_id}"


def left_in_fake(fake: Any) -> dict[str, list[str]]:
    """Names of the objects still in the proxy namespace, by resource (terminating ones too)."""
    found = {
        res: [o["metadata"]["name"] for o in fake.objects(res, NAMESPACE)] for res in RESOURCES
    }
    return {res: names for res, names in found.items() if names}


def pods_per_proxy(fake: Any) -> Counter[str]:
    """How many pods (terminating ones included) carry each proxy id."""
    return Counter(
        o["metadata"].get("labels", {}).get("proxyfleet.io/proxy-id", "")
        for o in fake.objects("pods", NAMESPACE)
    )


class ProxyEvents(ThreadedSubscriber):
    """Records (type, proxy id) of every event as published (a JetStream duplicate
    included)."""

    def __init__(self, url: str) -> None:
        super().__init__(url, "proxyfleet.events.>")
        self.seen: list[tuple[str, str]] = []

    def record(self, msg: Msg) -> None:
        body = json.loads(msg.data)
        self.seen.append((str(body.get("type", "")), str(body.get("proxy_id", ""))))

    def count(self, event_type: str, ids: list[str]) -> dict[str, int]:
        """How many `event_type` events each of `ids` had."""
        with self._lock:
            got = Counter(pid for kind, pid in self.seen if kind == event_type)
        return {pid: got[pid] for pid in ids}
