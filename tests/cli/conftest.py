"""The CLI's tests: the `proxyfleet` command run as a real process against the live API
of tests/live_api.py (real Redis, NATS, and a real Squid for pages), with a config file
of the test's own so the user's is never read."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from tests.live_api import LiveApi, client_squid, live_api

__all__ = ["Cli", "Lines", "LiveApi", "cli", "client_squid", "live_api"]

PROXYFLEET = Path(sys.executable).parent / "proxyfleet"
"""The console script uv installed (what a user runs)."""


@dataclass
class Cli:
    """Runs `proxyfleet` with PROXYFLEET_URL / PROXYFLEET_TOKEN of the live API."""

    url: str
    token: str
    config: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, token: str | None = None) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if "proxy" not in k.lower() or k == "PATH"
        }  # the runner's own proxy settings (and NO_PROXY) must not steer curl
        env.update(
            PROXYFLEET_URL=self.url,
            PROXYFLEET_TOKEN=self.token if token is None else token,
            PROXYFLEET_CONFIG=str(self.config),
            COLUMNS="200",
        )
        env.update(self.extra_env)
        return {k: v for k, v in env.items() if v != ""}

    def run(
        self,
        *args: str,
        token: str | None = None,
        input: str | None = None,
        timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PROXYFLEET), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env if env is not None else self.env(token),
            input=input,
            check=False,
        )

    def start(self, *args: str, token: str | None = None) -> subprocess.Popen[str]:
        """Started, not waited for: the caller signals, reads and waits it."""
        return subprocess.Popen(
            [str(PROXYFLEET), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(token),
        )


@pytest.fixture
def cli(live_api: LiveApi, tmp_path: Path) -> Cli:
    return Cli(live_api.url, live_api.client_token, tmp_path / "config.toml")


class Lines:
    """A process's stream read line by line in a thread, so a test can wait for a line
    with a deadline (a pipe read has none)."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in iter(stream.readline, ""):
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, needle: str, within: float = 15) -> str:
        """The first line from now on holding `needle`."""
        deadline = time.monotonic() + within
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"no line with {needle!r} within {within} s; got {self.seen}")
