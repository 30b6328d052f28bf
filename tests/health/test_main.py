"""`proxyfleet-health` as an operator runs it: a real process, flags, env, signals."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.conftest import TargetServer
from tests.health.conftest import PASSWORD, PROVIDER, MakeProxy, ProxyProcess

from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.devstack.servers import free_port
from proxyfleet.health.loops import LOOPS

HEALTH = str(Path(sys.executable).parent / "proxyfleet-health")

PROVIDERS_YAML = f"""
providers:
  - name: {PROVIDER}
    type: local
    zones: [z1]
    local:
      engine: squid
"""


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HEALTH, *args], capture_output=True, text=True, timeout=30, env=env, check=False
    )


def test_missing_providers_config_stops_with_a_message(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    done = _run("--providers-config", str(missing))
    assert done.returncode == 2
    assert f"{missing}: cannot read the providers config" in done.stderr


def test_bad_flag_values_stop_with_a_message(tmp_path: Path) -> None:
    config = tmp_path / "providers.yaml"
    config.write_text(PROVIDERS_YAML)
    env = {**os.environ, "PROXYFLEET_HEALTH_TIMEOUT": "9"}
    done = _run("--providers-config", str(config), "--interval", "5", env=env)
    assert done.returncode == 2
    assert "--timeout: expected 0 < s < --interval, got 9" in done.stderr
    done = _run("--providers-config", str(config), "--ca-file", str(tmp_path / "no-ca.pem"))
    assert done.returncode == 2
    assert "--ca-file" in done.stderr
    assert "cannot load CA certificates" in done.stderr
    bundle = tmp_path / "no-proxy-ca.pem"
    done = _run("--providers-config", str(config), "--proxy-ca-bundle", str(bundle))
    assert done.returncode == 2
    assert f"--proxy-ca-bundle {bundle}: cannot load CA certificates" in done.stderr


@pytest.mark.parametrize("loop", LOOPS)
async def test_runs_probes_serves_metrics_and_stops_on_sigterm(
    loop: str,
    tmp_path: Path,
    nats_url: str,
    redis_url: str,
    target: TargetServer,
    squid: ProxyProcess,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
) -> None:
    config = tmp_path / "providers.yaml"
    config.write_text(PROVIDERS_YAML)
    port = free_port()
    env = {
        **os.environ,
        "NATS_URL": nats_url,
        "REDIS_URL": redis_url,
        "PROXYFLEET_PROVIDERS_CONFIG": str(config),
        "PROXYFLEET_HEALTH_TARGET": target.url,
        "PROXYFLEET_HEALTH_CA_FILE": target.ca_file,
    }
    proxy = await make_proxy(squid.port)
    proc = await asyncio.create_subprocess_exec(
        HEALTH,
        *("--interval", "0.3", "--timeout", "0.25", "--stats-interval", "0.2", "--tick", "0.02"),
        *("--metrics-host", "127.0.0.1", "--metrics-port", str(port), "--loop", loop),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            deadline = time.monotonic() + 10
            metrics = ""
            while 'proxyfleet_proxies{phase="ready",provider="local"} 1.0' not in metrics:
                assert proc.returncode is None
                assert time.monotonic() < deadline, metrics
                await asyncio.sleep(0.1)
                try:
                    metrics = (await http.get("/metrics")).text
                except httpx.TransportError:
                    continue
            assert (await http.get("/healthz")).status_code == 200
            # Readiness is the state of this moment (the last claim, the relay's last pass):
            # on a busy machine it may follow the first ready proxy by a moment.
            while (ready := await http.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, ready.text
                await asyncio.sleep(0.1)
        assert 'proxyfleet_probes_total{result="ok"}' in metrics
        assert 'proxyfleet_probe_seconds_bucket{le="0.25",result="ok"}' in metrics
        stored = await registry.get(proxy.id)
        assert stored is not None
        assert stored.phase is Phase.READY
        proc.send_signal(signal.SIGTERM)
        output = (await asyncio.wait_for(proc.stdout.read(), 5)).decode()
        assert await asyncio.wait_for(proc.wait(), 5) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert '"event": "service.started"' in output
    assert f'"loop": "{loop}"' in output
    assert '"event": "health.proxy_transition"' in output
    assert '"event": "service.stopped"' in output
    assert PASSWORD not in output
