"""A cluster's seed list with dead servers in it, as the services get it
(PROXYFLEET_NATS_URL, comma-separated): one dead seed is skipped and the service becomes
ready on the live ones; with every seed dead it says which URLs it tried, on every attempt,
answers /readyz 503 and keeps trying (no crash, no restart loop hiding why)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from proxyfleet.devstack.nats_cluster import NatsCluster
from proxyfleet.devstack.servers import free_port

BIN = Path(sys.executable).parent
READY_WITHIN = 30.0
CONFIG = """providers:
  - name: seedlocal
    type: local
    zones: [local]
    local: {state_dir: STATE, engine: proxy.py, port_range: [31100, 31199]}
"""


@contextmanager
def _service(
    tmp_path: Path, service: str, nats_url: str, redis_url: str
) -> Iterator[tuple[int, subprocess.Popen[bytes], Path]]:
    """The service as a process: (its HTTP port, the process, its log)."""
    config = tmp_path / "providers.yaml"
    config.write_text(CONFIG.replace("STATE", str(tmp_path / "state")))
    port = free_port()
    argv = [str(BIN / f"proxyfleet-{service}"), "--providers-config", str(config)]
    argv += ["--log-format", "json"]
    if service == "api":
        argv += [
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--admin-token",
            "ops:an-admin-token-for-the-seed-tests",
        ]
    else:
        argv += ["--metrics-host", "127.0.0.1", "--metrics-port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    env |= {"PROXYFLEET_NATS_URL": nats_url, "PROXYFLEET_REDIS_URL": redis_url}
    log = tmp_path / f"{service}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield port, proc, log
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _readyz(port: int) -> int | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code
    except httpx.HTTPError:
        return None


def _wait(
    check: Callable[[], bool], within: float, what: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {log.read_text()}"
        time.sleep(0.1)  # a poll of another process: no event to await


@pytest.mark.parametrize("service", ["api", "gc"])
def test_a_dead_seed_is_skipped_and_the_service_becomes_ready(
    tmp_path: Path, service: str, nats_cluster: NatsCluster, redis_url: str
) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    with _service(tmp_path, service, f"{dead},{nats_cluster.url}", redis_url) as (port, proc, log):
        _wait(lambda: _readyz(port) == 200, READY_WITHIN, "/readyz 200", proc, log)
        output = log.read_text()
    assert "Traceback" not in output, output
    assert "backend_unreachable" not in output, output  # the first attempt connected


@pytest.mark.parametrize("service", ["api", "gc"])
def test_every_seed_dead_names_them_and_stays_unready(
    tmp_path: Path, service: str, redis_url: str, nats_url: str
) -> None:
    """(nats_url, unused, marks it a messaging test: `make test-fast` skips processes.)"""
    dead = [f"nats://127.0.0.1:{free_port()}" for _ in range(3)]
    with _service(tmp_path, service, ",".join(dead), redis_url) as (port, proc, log):

        def attempts() -> list[dict[str, object]]:
            lines = log.read_text().splitlines()
            return [json.loads(x) for x in lines if '"service.backend_unreachable"' in x]

        _wait(lambda: _readyz(port) == 503, READY_WITHIN, "/readyz 503", proc, log)
        _wait(lambda: len(attempts()) >= 2, READY_WITHIN, "two attempts", proc, log)
        assert _readyz(port) == 503
        assert proc.poll() is None, log.read_text()  # still trying: no exit, no crash loop
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, log.read_text()
        output = log.read_text()
    assert "Traceback" not in output, output
    for line in attempts():
        assert line["backend"] == "nats"
        for url in dead:  # the message names every seed it tried
            assert url in str(line["url"]), line
            assert url in str(line["error"]), line
