"""The API under test: the production app with the bench's baseline routes
(proxyfleet.bench.apiapp), one worker, as a process."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from proxyfleet.bench.env import BenchEnv
from proxyfleet.devstack.servers import free_port

PROVIDER = "bench"
ZONE = "bench-a"


def providers_yaml(state_dir: Path) -> str:
    return (
        "providers:\n"
        f"  - name: {PROVIDER}\n"
        "    type: local\n"
        f"    zones: [{ZONE}]\n"
        "    local:\n"
        f"      state_dir: {state_dir}\n"
    )


def process_rss_kb(pid: int) -> int:
    """VmRSS of a process and of every process below it (a server may fork workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


@dataclass
class ApiProcess:
    url: str
    token: str
    proc: subprocess.Popen[bytes]
    log: Path
    peak_rss_kb: int = 0

    def rss_mb(self) -> float:
        return process_rss_kb(self.proc.pid) / 1024

    async def sample_rss(self, every: float = 0.25) -> None:
        """Keep the peak RSS until cancelled (run it beside a load)."""
        while True:
            self.peak_rss_kb = max(self.peak_rss_kb, process_rss_kb(self.proc.pid))
            await asyncio.sleep(every)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def start_api(env: BenchEnv, *, cooldown: float) -> ApiProcess:
    """Start the API with the baseline routes on a free port; wait until /readyz."""
    folder = env.base_dir / "api"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "providers.yaml"
    config.write_text(providers_yaml(folder / "local"))
    token = "bench-" + secrets.token_urlsafe(18)  # the bearer; configured as bench:<token>
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    args = [
        sys.executable, "-m", "proxyfleet.bench.apiapp",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--cooldown", repr(cooldown),
        # No health in the API runs: the seeded good probe stays recent; every grant still
        # makes the freshness check.
        "--max-probe-age", "86400",
        "--nats-url", env.nats_url,
        "--redis-url", env.redis_url,
        "--providers-config", str(config),
        "--installation-id", "bench",
    ]  # fmt: skip
    log = folder / "api.log"
    with open(log, "ab") as out:  # noqa: ASYNC230  (before the load: nothing to block)
        proc = subprocess.Popen(  # noqa: ASYNC220  (a long-lived server, not awaited)
            args,
            env={**clean, "PROXYFLEET_CLIENT_TOKENS": f"bench:{token}"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    api = ApiProcess(f"http://127.0.0.1:{port}", token, proc, log)
    try:
        await wait_ready(api)
    except BaseException:
        api.stop()
        raise
    return api


async def wait_ready(api: ApiProcess, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(base_url=api.url, timeout=2) as client:
        while time.monotonic() < deadline:
            if api.proc.poll() is not None:
                break
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    tail = api.log.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the API at {api.url} was not ready in {within}s; log:\n{tail}")
