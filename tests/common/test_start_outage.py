"""Every service started as a process while NATS (or Redis) is unreachable keeps trying
with backoff, says so once per attempt (no tracebacks), answers /readyz 503 meanwhile and
stops within a few seconds on SIGTERM and on SIGINT, with exit 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from proxyfleet.devstack.servers import free_port

BIN = Path(sys.executable).parent
PROVIDER = "outagelocal"
STOP_WITHIN = 5.0
"""Seconds a stopping service may take (it takes well under one)."""

CONFIG = f"""providers:
  - name: {PROVIDER}
    type: local
    zones: [local]
    local: {{state_dir: STATE, engine: proxy.py, port_range: [31000, 31099]}}
"""


def _argv(service: str, port: int, config: Path) -> list[str]:
    base = [str(BIN / f"proxyfleet-{service}"), "--providers-config", str(config)]
    base += ["--log-format", "json"]
    if service == "api":
        token = "ops:an-admin-token-for-the-outage-tests"
        return [*base, "--host", "127.0.0.1", "--port", str(port), "--admin-token", token]
    base += ["--metrics-host", "127.0.0.1", "--metrics-port", str(port)]
    if service == "provisioner-local":
        base += ["--provider", PROVIDER, "--installation-id", "outage-tests"]
    return base


def _readyz(port: int) -> int | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code
    except httpx.HTTPError:
        return None


def _run_while_unreachable(
    tmp_path: Path, service: str, nats_url: str, redis_url: str, sig: signal.Signals
) -> tuple[int, str]:
    """Start the service, see /readyz 503, let it retry a while, signal it; returns
    (exit code, its output)."""
    config = tmp_path / "providers.yaml"
    config.write_text(CONFIG.replace("STATE", str(tmp_path / "state")))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    env |= {"PROXYFLEET_NATS_URL": nats_url, "PROXYFLEET_REDIS_URL": redis_url}
    log = tmp_path / f"{service}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            _argv(service, port, config), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 30
        status = None
        while status is None and time.monotonic() < deadline and proc.poll() is None:
            status = _readyz(port)
            time.sleep(0.1)
        assert status == 503, f"{service}: /readyz {status}; {log.read_text()}"
        time.sleep(2.0)  # a few more attempts (0.5 s, then 1 s, 2 s, ...)
        assert _readyz(port) == 503
        assert proc.poll() is None, log.read_text()
        proc.send_signal(sig)
        started = time.monotonic()
        code = proc.wait(STOP_WITHIN + 5)
        took = time.monotonic() - started
        assert took < STOP_WITHIN, f"{service} took {took:.1f} s to stop on {sig.name}"
        return code, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


SERVICES = ["api", "provisioner-local", "health", "gc"]


def _check_output(service: str, backend: str, output: str) -> None:
    assert "Traceback" not in output, output
    attempts = output.count('"service.backend_unreachable"')
    assert attempts >= 2, output  # it kept trying
    assert attempts <= 8, output  # with a backoff: not a line every half second
    # Besides one line per attempt, only the fixed start and stop lines (uvicorn's too).
    others = [line for line in output.splitlines() if "backend_unreachable" not in line]
    assert len([line for line in others if line.strip()]) <= 14, output
    assert f'"backend": "{backend}"' in output, output


@pytest.mark.parametrize("service", SERVICES)
def test_nats_unreachable_at_start(
    tmp_path: Path, service: str, redis_url: str, nats_url: str
) -> None:
    """(nats_url, unused, marks it a messaging test: `make test-fast` skips processes.)"""
    closed_nats = f"nats://127.0.0.1:{free_port()}"
    # SIGTERM for some, SIGINT for the others; the Redis test below swaps them.
    sig = signal.SIGTERM if SERVICES.index(service) % 2 == 0 else signal.SIGINT
    code, output = _run_while_unreachable(tmp_path, service, closed_nats, redis_url, sig)
    assert code == 0, output
    _check_output(service, "nats", output)


@pytest.mark.parametrize("service", SERVICES)
def test_redis_unreachable_at_start(tmp_path: Path, service: str, nats_url: str) -> None:
    closed_redis = f"redis://127.0.0.1:{free_port()}/0"
    sig = signal.SIGINT if SERVICES.index(service) % 2 == 0 else signal.SIGTERM
    code, output = _run_while_unreachable(tmp_path, service, nats_url, closed_redis, sig)
    assert code == 0, output
    _check_output(service, "redis", output)
