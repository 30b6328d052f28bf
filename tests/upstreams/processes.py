"""Starting and stopping the upstreams' processes, by the pid of each (I/O)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from tests.loopback_squid.host import accepts, kill, tail

INSTALL_HINT = "install it with `make system-packages` (Debian package {package})"
START_TIMEOUT = 10.0


def require_binary(path: str, package: str) -> str:
    """`path` if it is there; otherwise the test fails (never skips) with the install hint."""
    found = shutil.which(path)
    if found is None:
        pytest.fail(f"{path} not found: " + INSTALL_HINT.format(package=package), pytrace=False)
    return found


def start_listening(
    argv: list[str], directory: Path, host: str, port: int
) -> subprocess.Popen[bytes]:
    """`argv` started in `directory` (its output in `out.log` there), once `host:port`
    accepts connections; the test fails with the output's end if it does not."""
    log = directory / "out.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out, cwd=directory)
    why = _wait_listening(proc, host, port)
    if why:
        stop(proc)
        pytest.fail(f"{argv[0]}: {why}: {tail(log)} {tail(directory / 'cache.log')}", pytrace=False)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """This process (by its pid) gone at once: none of them keeps anything worth a
    graceful stop."""
    with contextlib.suppress(ProcessLookupError):
        kill(proc)


def _wait_listening(proc: subprocess.Popen[bytes], host: str, port: int) -> str:
    """ "" once `host:port` accepts; otherwise why not (exited, or not in time)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"exited with {proc.returncode}"
        if accepts(host, port):
            return ""
        time.sleep(0.05)
    return f"did not listen on {host}:{port} in {START_TIMEOUT:g} s"
