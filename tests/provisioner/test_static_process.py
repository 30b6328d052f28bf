"""The real `proxyfleet-provisioner-static` console script as a process: it registers its
file's proxies, applies an edit on SIGHUP, exits 0 on SIGTERM; a bad inline proxy stops
it at start with exit code 2, naming file, key and line and never the password."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.devstack.servers import free_port

from .helpers import INSTALLATION, wait_for_phase, wait_until
from .static_fixtures import line_id

SCRIPT = str(Path(sys.executable).parent / "proxyfleet-provisioner-static")


def argv(config: Path, provider: str, nats_url: str, redis_url: str, port: int) -> list[str]:
    return [
        SCRIPT, "--provider", provider, "--providers-config", str(config),
        "--nats-url", nats_url, "--redis-url", redis_url, "--installation-id", INSTALLATION,
        "--metrics-port", str(port), "--sync-interval", "0.2", "--log-format", "json",
    ]  # fmt: skip


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)


async def ready(port: int) -> bool:
    try:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


async def test_the_process_registers_reloads_on_sighup_and_stops(
    tmp_path: Path, nats_url: str, redis_url: str, provider_name: str, registry: ProxyRegistry
) -> None:
    lines = ["127.6.0.1:3128:u:proc-pw-1", "socks5://u:proc-pw-2@127.6.0.2:1080"]
    listing = tmp_path / "proxies.txt"
    listing.write_text(lines[0] + "\n")
    config = tmp_path / "providers.yaml"
    config.write_text(
        f"providers:\n  - name: {provider_name}\n    type: static\n    zones: [z1]\n"
        f"    static:\n      sources: [{{file: '{listing}', refresh: 3600}}]\n"
    )
    port = free_port()
    log = tmp_path / "provisioner.log"
    proc = start(argv(config, provider_name, nats_url, redis_url, port), log)
    try:
        await wait_until(lambda: ready(port), 15, "the provisioner to be ready")
        await wait_for_phase(registry, line_id(provider_name, lines[0]), Phase.BOOTING)
        listing.write_text("\n".join(lines) + "\n")
        os.kill(proc.pid, signal.SIGHUP)
        await wait_for_phase(registry, line_id(provider_name, lines[1]), Phase.BOOTING)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    text = log.read_text()
    assert "static.proxies_added" in text
    assert "proc-pw" not in text


def test_a_bad_inline_proxy_stops_the_start_with_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "providers.yaml"
    config.write_text(
        "providers:\n  - name: mine\n    type: static\n    zones: [z1]\n    static:\n"
        "      proxies:\n        - url: http://127.6.0.1:3128\n"
        "        - url: socks5://u:start-pw@127.6.0.2:99999\n"
    )
    done = subprocess.run(
        [SCRIPT, "--provider", "mine", "--providers-config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert (
        f"{config}: key providers[0].static.proxies[1].url: port out of range: expected 1-65535"
        " (line 8)"
    ) in done.stderr
    assert "start-pw" not in done.stderr + done.stdout
