"""The whole system with a GCP provider: every service as a process (provisioner-gcp
included) over real NATS and Redis, the fake GCE in this process booting real Squids."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.e2e.provider_stack import running

from proxyfleet.devstack.commands import service_bin
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack


def gcp_provider_yaml(
    endpoint: str, project: str, target_port: int, in_flight: int, extra: str = ""
) -> str:
    return (
        f"""  - name: gcp
    type: gcp
    zones: [us-a, us-b]
    boot_timeout: 30
    gcp:
      project: {project}
      zones: {{us-a: us-central1-a, us-b: us-central1-b}}
      source_ranges: [127.0.0.0/8]
      api_endpoint: {endpoint}
      anonymous: true
      connect_ports: [443, {target_port}]
      max_operations_in_flight: {in_flight}
      sweep_min_age: 1
      sweep_interval: 1
"""
        + extra
    )


@contextmanager
def gcp_stack(
    fake: Any, nats_url: str, redis_url: str, db: int, in_flight: int = 16, extra_gcp: str = ""
) -> Iterator[Stack]:
    """The whole system on the fake GCE; `extra_gcp`: more keys of the provider's `gcp:`
    section (YAML lines indented by six)."""
    base = Path(tempfile.mkdtemp(prefix="proxyfleet-gcp-"))
    base.chmod(0o711)  # Squid run as root drops to `proxy`: the path must be traversable
    target_port = free_port()
    metrics_port = free_port()
    opts = StackOptions.on_free_ports(
        base_dir=base,
        nats_url=nats_url,
        redis_url=redis_url.rsplit("/", 1)[0] + f"/{db}",
        health_interval=0.5,
        gc_interval=1.0,
        gc_min_age=3.0,
        cooldown=1.0,
        boot_timeout=30.0,
        echo=None,
        installation_id=f"gcp-e2e-{db}",
        target_port=target_port,
        extra_providers=gcp_provider_yaml(
            fake.endpoint, fake.project, target_port, in_flight, extra_gcp
        ),
        extra_services={
            "provisioner-gcp": [
                service_bin("proxyfleet-provisioner-gcp"),
                "--provider",
                "gcp",
                "--metrics-port",
                str(metrics_port),
                "--reconcile-interval",
                "1",
                "--preemption-interval",
                "1",
                "--log-level",
                "debug",
            ]
        },
        extra_args={"api": ["--sweep-interval", "0.5"]},
    )
    with running(opts, "provisioner-gcp", metrics_port) as s:
        yield s


def max_overlap(operations: list[dict[str, Any]], kind: str) -> int:
    """Most operations of `kind` (insert, delete) open at one moment, from the fake's
    insertTime and endTime of each."""
    edges: list[tuple[float, int]] = []
    for op in operations:
        if op.get("operationType") != kind or "endTime" not in op:
            continue
        edges.append((datetime.fromisoformat(op["insertTime"]).timestamp(), 1))
        edges.append((datetime.fromisoformat(op["endTime"]).timestamp(), -1))
    best = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
        now += step
        best = max(best, now)
    return best
