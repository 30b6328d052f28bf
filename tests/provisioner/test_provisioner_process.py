"""The real console script as a process: killed with -9 in the middle of a create and
started again, it ends with the proxy booting and exactly one proxy process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.devstack.servers import free_port
from proxyfleet.provisioner_local import commands
from proxyfleet.provisioner_local.files import read_marker
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.processes import find_session_leader

from .helpers import INSTALLATION, add_pending_proxy, connect_status, wait_for_phase, wait_until

SCRIPT = str(Path(sys.executable).parent / "proxyfleet-provisioner-local")

Start = Callable[[], subprocess.Popen[bytes]]


def write_config(path: Path, name: str, state_dir: Path, engine: str) -> Path:
    path.write_text(
        f"""providers:
  - name: {name}
    type: local
    zones: [local]
    boot_timeout: 60
    local:
      state_dir: {state_dir}
      engine: {engine}
      port_range: [30000, 30999]
  - name: elsewhere
    type: local
    zones: [local]
    local: {{}}
"""
    )
    return path


@pytest.fixture
def provisioner(
    tmp_path: Path, nats_url: str, redis_url: str, provider_name: str, proxy_state_dir: Path
) -> Iterator[tuple[Start, int]]:
    """Starts the console script (same arguments each time); all are killed at the end."""
    config = write_config(tmp_path / "providers.yaml", provider_name, proxy_state_dir, "proxy.py")
    port = free_port()
    argv = [
        SCRIPT,
        "--provider",
        provider_name,
        "--providers-config",
        str(config),
        "--nats-url",
        nats_url,
        "--redis-url",
        redis_url,
        "--installation-id",
        INSTALLATION,
        "--metrics-port",
        str(port),
        "--ack-wait",
        "2",
        "--reconcile-interval",
        "0.5",
        "--log-format",
        "console",
    ]
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"provisioner-{len(started)}.log", "wb")  # noqa: SIM115
        started.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))
        log.close()
        return started[-1]

    yield start, port
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


async def ready(port: int) -> bool:
    try:
        async with httpx.AsyncClient() as client:
            return (
                await client.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
            ).status_code == 200
    except httpx.HTTPError:
        return False


async def test_kill_9_in_the_middle_of_a_create_then_restart(
    provisioner: tuple[Start, int],
    registry: ProxyRegistry,
    provider_name: str,
    proxy_state_dir: Path,
) -> None:
    start, port = provisioner
    first = start()
    await wait_until(lambda: ready(port), 15, "the provisioner to be ready")
    proxy = await add_pending_proxy(registry, provider_name)
    folder = ProxyFolder(proxy_state_dir / INSTALLATION / proxy.id, proxy.id)

    async def engine_spawned() -> bool:
        marker = read_marker(folder.marker)
        return marker is not None and marker.pid > 0

    # its create intent goes out through the store's outbox (the provisioner relays it)
    await wait_until(engine_spawned, 10, "the proxy process to be spawned")
    first.kill()  # SIGKILL: no cleanup, the intent is neither acked nor NAKed
    first.wait(5)
    at_kill = await registry.get(proxy.id)
    assert at_kill is not None
    assert at_kill.phase is Phase.PROVISIONING  # the create was cut in the middle

    start()
    booting = await wait_for_phase(registry, proxy.id, Phase.BOOTING, within=20)
    pids = find_session_leader(commands.engine_signatures(folder))
    marker = read_marker(folder.marker)
    assert marker is not None
    assert pids == [marker.pid]
    folders = sorted(p.name for p in (proxy_state_dir / INSTALLATION).iterdir())
    assert folders == sorted([".locks", proxy.id])  # one proxy folder (and the lock files)
    assert booting.port == marker.port
    assert await asyncio.to_thread(connect_status, booting.port, "example.com:443") == 407


async def test_metrics_and_a_clean_stop_on_sigterm(provisioner: tuple[Start, int]) -> None:
    start, port = provisioner
    proc = start()
    await wait_until(lambda: ready(port), 15, "the provisioner to be ready")
    async with httpx.AsyncClient() as client:
        assert (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200
        metrics = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    assert "proxyfleet_messages_handled_total" in metrics
    os.kill(proc.pid, signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, 15) == 0


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unknown provider", "no provider named 'missing'"),
        ("unknown key", "bogus"),
        ("bad flag", "--ack-wait: expected a positive number of seconds, got 0"),
    ],
)
async def test_a_bad_config_stops_with_a_message(
    tmp_path: Path, proxy_state_dir: Path, case: str, message: str
) -> None:
    config = write_config(tmp_path / "providers.yaml", "present", proxy_state_dir, "auto")
    argv = [SCRIPT, "--providers-config", str(config), "--provider", "present"]
    if case == "unknown provider":
        argv[-1] = "missing"
    elif case == "unknown key":
        config.write_text(
            "providers:\n  - name: x\n    type: local\n    zones: [z]\n    bogus: 1\n"
        )
    else:
        argv += ["--ack-wait", "0"]
    out = await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=30, check=False
    )
    assert out.returncode == 2
    assert message in out.stderr
    if case != "bad flag":
        assert str(config) in out.stderr
