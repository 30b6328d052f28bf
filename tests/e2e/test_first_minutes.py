"""A new user's first five minutes, automated: `make run` (`proxyfleet-dev run`, a real
process with its own NATS, Redis, services and base folder), then the banner's first
commands in bash: three proxies, and `proxyfleet lease -- curl <dev target>` printing the
page through a leased proxy; the lease is released afterwards (checked through the API)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tests.devstack.procs import alive, children, command_name

from proxyfleet.devstack.banner import cli_command, cli_copy_paste
from proxyfleet.devstack.providers import stop_local_proxies

REPO = Path(__file__).resolve().parents[2]
DEV = str(Path(sys.executable).parent / "proxyfleet-dev")


@dataclass
class DevRun:
    base: Path
    env_file: Path
    output: Path
    """Everything `proxyfleet-dev run` printed (banner and service logs)."""

    def values(self) -> dict[str, str]:
        """The env file's exports, as bash would see them."""
        found: dict[str, str] = {}
        for line in self.env_file.read_text().splitlines():
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").partition("=")
                found[name] = shlex.split(value)[0]
        return found


def _start_dev_run() -> tuple[subprocess.Popen[bytes], DevRun]:
    """`proxyfleet-dev run` in a fresh folder, once its banner is out."""
    # Squid drops to user `proxy` when run as root: the folder must be traversable.
    base = Path(tempfile.mkdtemp(prefix="proxyfleet-first-"))
    base.chmod(0o711)
    out = base / "run.out"
    env = {k: v for k, v in os.environ.items() if k not in {"NATS_URL", "REDIS_URL"}}
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [DEV, "run", "--base-dir", str(base / ".dev"), "--api-port", "0"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )
    run = DevRun(base / ".dev", base / ".dev" / "stack.env", out)
    deadline = time.monotonic() + 90
    while "Ctrl-C stops everything" not in out.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc, run)
            raise AssertionError(out.read_text(errors="replace")[-3000:])
        time.sleep(0.2)
    return proc, run


def _stop(proc: subprocess.Popen[bytes], run: DevRun) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # Ctrl-C, as the banner says
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stop_local_proxies(run.base / "local-proxies")
    shutil.rmtree(run.base.parent, ignore_errors=True)


@pytest.fixture
def dev_run() -> Iterator[DevRun]:
    proc, run = _start_dev_run()
    try:
        yield run
    finally:
        _stop(proc, run)


def test_make_run_then_proxyfleet_lease_curl_prints_the_page(
    dev_run: DevRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    banner = dev_run.output.read_text(errors="replace")
    monkeypatch.chdir(REPO)  # where `make run` ran: the banner names the CLI from there
    cli = cli_command()
    commands = cli_copy_paste(dev_run.env_file, cli)
    first_block = banner.split("Try it (bash)", 1)[1].split("Or with curl alone", 1)[0]
    for line in commands.splitlines():
        assert line in first_block  # what the test runs is what the banner shows, first

    script = "set -euo pipefail\n" + commands
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout.strip().splitlines()[-1])
    assert page["ok"] is True  # the dev target's page, through the proxy

    leased = re.search(r"proxyfleet: leased (\S+) \(lease (\S+), epoch", done.stderr)
    assert leased is not None, done.stderr
    proxy_id, lease_id = leased.groups()
    values = dev_run.values()
    admin = {"Authorization": f"Bearer {values['ADMIN']}"}
    lease = httpx.get(f"{values['PF']}/v1/leases/{lease_id}", headers=admin, timeout=10)
    assert lease.status_code == 200, lease.text
    assert (lease.json()["state"], lease.json()["proxy_id"]) == ("released", proxy_id)
    proxies = httpx.get(f"{values['PF']}/v1/proxies", headers=admin, timeout=10).json()
    assert len(proxies["items"]) == 3
    assert not any(p["leased"] for p in proxies["items"])


def test_a_sigkilled_make_run_leaves_no_service_or_server_running() -> None:
    """NATS, Redis, the target and every service end with a launcher that could not stop
    them (SIGKILL); the local proxies stay, for the next run to adopt."""
    proc, run = _start_dev_run()
    started: list[int] = []
    try:
        started = children(proc.pid)
        assert len(started) >= 8  # nats, redis, target, api, gateway, provisioner, health, gc
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while running := [pid for pid in started if alive(pid)]:
            names = {pid: command_name(pid) for pid in running}
            assert time.monotonic() < deadline, f"still running 30 s after: {names}"
            time.sleep(0.1)
    finally:
        for pid in filter(alive, started):  # what the launcher started, each in its session
            os.killpg(pid, signal.SIGKILL)
        _stop(proc, run)
