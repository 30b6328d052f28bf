"""Running the whole system with one more provisioner process (GCP, Kubernetes): start the
stack, wait until that provisioner answers /readyz, and on the way out stop it all and
print the tail of every service's log."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from tests.e2e.journey import wait_for

from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import stop_local_proxies
from proxyfleet.devstack.stack import Stack


@contextmanager
def running(opts: StackOptions, provisioner: str, metrics_port: int) -> Iterator[Stack]:
    """The started stack of `opts`; its base directory is removed afterwards."""
    s = Stack(opts)
    base = opts.base_dir
    try:
        s.start()
        # The stack waits for the API only; importing a cloud client takes seconds.
        wait_for(
            f"{provisioner} ready",
            lambda: ready(f"http://127.0.0.1:{metrics_port}/readyz"),
            timeout=90,
        )
        yield s
    finally:
        s.stop()
        stop_local_proxies(base / "local-proxies")
        for log in sorted((base / "logs").glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"---- {log.name} (last lines)\n" + "\n".join(tail))
        shutil.rmtree(base, ignore_errors=True)


def ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def log_text(stack: Stack) -> str:
    """Every service's log, concatenated."""
    return "\n".join(
        p.read_text(errors="replace") for p in (stack.opts.base_dir / "logs").glob("*.log")
    )
