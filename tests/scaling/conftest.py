"""Three provisioners, three health replicas and two APIs on one NATS and one Redis (the
stack's own, on free ports), with real local proxies and a local HTTPS target."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.scaling.fleet import Replicas

from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.stack import Stack

PROBE_INTERVAL = float(os.environ.get("PROXYFLEET_SCALING_INTERVAL", "1.0"))
"""Seconds between two probes of one proxy: short, so a window of seconds holds many
rounds (bench/scaling.sh runs the minute-long measurement at the default, 5)."""


@pytest.fixture(scope="module")
def replicas() -> Iterator[Replicas]:
    # Squid drops to user `proxy` when run as root: every folder on the way to its files
    # must be traversable, which pytest's 0700 temp root is not.
    base = Path(tempfile.mkdtemp(prefix="proxyfleet-scaling-"))
    base.chmod(0o711)
    opts = StackOptions.on_free_ports(
        base_dir=base,
        health_interval=PROBE_INTERVAL,
        gc_interval=5.0,
        gc_min_age=60.0,
        cooldown=2.0,
        boot_timeout=30.0,
        echo=None,
        installation_id="scaling",
        # Default ack-wait and stale-after: a killed provisioner's intents come back by
        # redelivery after the ack-wait, not by the reconciler republishing them.
    )
    stack = Stack(opts)
    fleet = Replicas(stack, api_urls=[])
    try:
        stack.start()
        fleet.api_urls.append(stack.api_url)
        fleet.add("provisioner", 3)
        fleet.add("health", 3)
        fleet.add("api", 2)
        yield fleet
    finally:
        stack.stop()
        _print_logs_on_failure(base)
        shutil.rmtree(base, ignore_errors=True)


def _print_logs_on_failure(base: Path) -> None:
    for log in sorted((base / "logs").glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-12:]
        print(f"---- {log.name} (last lines)\n" + "\n".join(tail))
