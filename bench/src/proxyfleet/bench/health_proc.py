"""Processes the health and lifecycle benchmarks start and watch: the dev HTTPS target, a
health service, and what /proc says about any of them (RSS, CPU time)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from proxyfleet.devstack.servers import free_port

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PROBES_TOTAL = re.compile(r'^proxyfleet_probes_total\{result="([^"]*)"\} (\S+)$', re.M)


def rss_mb(pid: int) -> float:
    """Resident set size of a process (VmRSS), in MB; 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Target:
    """The dev stack's HTTPS target (`python -m proxyfleet.devstack.target`)."""

    url: str
    port: int
    ca_file: str
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        stop_process(self.proc, 5.0)


def start_target(directory: Path) -> Target:
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxyfleet.devstack.target", "--port", "0", "--dir", directory],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    match = re.fullmatch(r"listening on https://127\.0\.0\.1:(\d+)\s*", line)
    if not match:
        stop_process(proc, 2.0)
        raise RuntimeError(f"the HTTPS target did not start: {line!r}")
    port = int(match.group(1))
    return Target(f"https://127.0.0.1:{port}/", port, str(directory / "ca.pem"), proc)


@dataclass
class HealthProcess:
    """One `proxyfleet-health` process and its /metrics endpoint."""

    proc: subprocess.Popen[bytes]
    metrics_url: str
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def probes(self) -> dict[str, float]:
        """proxyfleet_probes_total by result ("ok", "auth", "timeout", ...); empty until the
        endpoint answers."""
        try:
            text = httpx.get(self.metrics_url, timeout=2).text
        except httpx.HTTPError:
            return {}
        return {m.group(1): float(m.group(2)) for m in _PROBES_TOTAL.finditer(text)}

    def wait_serving(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"proxyfleet-health exited: see {self.log}")
            try:
                httpx.get(self.metrics_url, timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise TimeoutError(f"proxyfleet-health did not serve /metrics within {timeout}s")

    def stop(self) -> None:
        stop_process(self.proc)


def start_health(
    *, nats_url: str, redis_url: str, providers_config: Path, log: Path, args: list[str]
) -> HealthProcess:
    """`proxyfleet-health` (the venv's console script) with `args`; output to `log`."""
    port = free_port()
    binary = str(Path(sys.executable).parent / "proxyfleet-health")
    env = dict(
        os.environ,
        NATS_URL=nats_url,
        REDIS_URL=redis_url,
        PROXYFLEET_PROVIDERS_CONFIG=str(providers_config),
        PROXYFLEET_LOG_LEVEL="warning",
    )
    argv = [binary, "--metrics-host", "127.0.0.1", "--metrics-port", str(port), *args]
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out, env=env, start_new_session=True)
    health = HealthProcess(proc, f"http://127.0.0.1:{port}/metrics", log)
    try:
        health.wait_serving()
    except BaseException:
        health.stop()
        raise
    return health
