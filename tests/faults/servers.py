"""NATS and Redis for the fault suite on fixed loopback ports, so they can be stopped and
started again where the services look for them (the dev stack's pick a new port)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from proxyfleet.devstack.servers import free_port, nats_server_binary, redis_server_binary
from proxyfleet.devstack.servers import wait_tcp as _wait_tcp


def stop_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop a process and its group (every server here is started in a session of its own)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(10)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@dataclass
class Restartable:
    """One NATS or Redis server whose port and data folder survive a restart."""

    kind: str
    data_dir: Path
    log: Path
    port: int = field(default_factory=free_port)
    persist: bool = True
    """Redis: append-only file on, fsynced before each answer, or nothing kept. Not
    `everysec` (what deploy/ runs): while a background fsync is slow (the junk this suite
    loads to see LOADING), that policy answers writes it has not written yet for up to 2 s,
    which a kill -9 then loses (docs/operations.md). The suite checks that Proxyfleet loses
    nothing Redis acknowledged, so it runs the policy under which Redis loses nothing."""
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        scheme = "nats" if self.kind == "nats" else "redis"
        return f"{scheme}://127.0.0.1:{self.port}" + ("/0" if self.kind == "redis" else "")

    def _args(self) -> list[str]:
        if self.kind == "nats":
            return [nats_server_binary(), "-a", "127.0.0.1", "-p", str(self.port), "-js"]
        aof = "yes" if self.persist else "no"
        return [
            redis_server_binary(),
            *("--port", str(self.port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", aof, "--appendfsync", "always"),
            *("--dir", str(self.data_dir), "--daemonize", "no"),
        ]

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = self._args()
        if self.kind == "nats":
            args += ["-sd", str(self.data_dir)]
        out = open(self.log, "ab")  # noqa: SIM115  (the child keeps it)
        self.proc = subprocess.Popen(
            args, stdout=out, stderr=out, start_new_session=True, cwd=self.data_dir
        )
        _wait_tcp("127.0.0.1", self.port, timeout=20)

    def kill(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)

    def wipe(self) -> None:
        """Drop every file the server kept (a Redis that persisted nothing)."""
        for path in sorted(self.data_dir.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()

    def fill_junk(self, keys: int = 300_000) -> None:
        """Redis: keys in a database of their own, so a restart takes a moment to load."""
        with redis.Redis.from_url(self.url.rsplit("/", 1)[0] + "/9") as r:
            if r.dbsize() >= keys:
                return
            pipe = r.pipeline(transaction=False)
            for start in range(0, keys, 1000):
                pipe.mset({f"junk:{i}": "x" * 64 for i in range(start, start + 1000)})
            pipe.execute()

    def loading_seconds(self, timeout: float = 60) -> float:
        """Redis: seconds until the just started server stops answering LOADING."""
        t0 = time.monotonic()
        with redis.Redis.from_url(self.url) as r:
            while time.monotonic() - t0 < timeout:
                try:
                    r.ping()
                    break
                except redis.exceptions.BusyLoadingError:
                    time.sleep(0.05)
        return time.monotonic() - t0
