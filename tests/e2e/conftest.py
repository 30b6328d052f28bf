"""The whole system as separate processes, started exactly as `make run` starts it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.k8s.fake_kube import FakeKube

from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import stop_local_proxies
from proxyfleet.devstack.stack import Stack


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, nats_url: str, redis_url: str
) -> Iterator[Stack]:
    # Squid drops to user `proxy` when run as root: every folder on the way to its files
    # must be traversable, which pytest's 0700 temp root is not.
    base = Path(tempfile.mkdtemp(prefix="proxyfleet-e2e-"))
    base.chmod(0o711)
    opts = StackOptions.on_free_ports(
        base_dir=base,
        nats_url=nats_url,
        redis_url=redis_url.rsplit("/", 1)[0] + "/3",  # a database of its own
        health_interval=0.5,
        gc_interval=1.0,
        gc_min_age=3.0,
        cooldown=2.0,
        boot_timeout=20.0,
        echo=None,
        installation_id="e2e",
        extra_args={
            "provisioner": ["--ack-wait", "3", "--stale-after", "3", "--reconcile-interval", "1"],
            "api": ["--sweep-interval", "0.5"],
        },
    )
    s = Stack(opts)
    try:
        s.start()
        yield s
    finally:
        s.stop()
        # Redis was not the stack's own, so stop() leaves proxies for adoption: not here.
        stop_local_proxies(base / "local-proxies")
        _print_logs_on_failure(base)
        shutil.rmtree(base, ignore_errors=True)


def _print_logs_on_failure(base: Path) -> None:
    for log in sorted((base / "logs").glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-15:]
        print(f"---- {log.name} (last lines)\n" + "\n".join(tail))


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    """A fake Kubernetes API server (tests/k8s/fake_kube) for the provisioner-k8s stacks;
    closed, with every Squid its kubelet started, at teardown."""
    f = FakeKube().start()
    try:
        yield f
    finally:
        f.close()
