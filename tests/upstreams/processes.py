"""Starting and stopping the upstreams' processes, by the pid of each (I/O)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.loopback_squid.host import accepts, kill, tail

from proxyfleet.devstack.servers import free_port

INSTALL_HINT = "install it with `make system-packages` (Debian package {package})"
START_TIMEOUT = 10.0
START_ATTEMPTS = 3


def require_binary(path: str, package: str) -> str:
    """`path` if it is there; otherwise the test fails (never skips) with the install hint."""
    found = shutil.which(path)
    if found is None:
        pytest.fail(f"{path} not found: " + INSTALL_HINT.format(package=package), pytrace=False)
    return found


def start_listening(
    argv_for: Callable[[int], list[str]], directory: Path, host: str
) -> tuple[subprocess.Popen[bytes], int]:
    """(the process `argv_for(port)` started in `directory`, its port) once it accepts
    connections on a free `host` port; the test fails with its output's end if it does not.
    A free port may be taken before the process binds it (other suites share the machine):
    a process that exits at once is tried again on another."""
    log = directory / "out.log"
    why = ""
    for _ in range(START_ATTEMPTS):
        port = free_port(host)
        argv = argv_for(port)
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=out, cwd=directory)
        why = _wait_listening(proc, Path(argv[0]).name, host, port)
        if not why:
            return proc, port
        stop(proc)
        if " exited " not in why:
            break
    pytest.fail(f"{why}: {tail(log)} {tail(directory / 'cache.log')}", pytrace=False)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """This process (by its pid) gone at once: none of them keeps anything worth a
    graceful stop."""
    with contextlib.suppress(ProcessLookupError):
        kill(proc)


def _wait_listening(proc: subprocess.Popen[bytes], name: str, host: str, port: int) -> str:
    """ "" once `host:port` accepts; otherwise why not (exited, or not in time)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"{name} exited with {proc.returncode}"
        if accepts(host, port) and proc.poll() is None:
            return ""
        time.sleep(0.05)
    return f"{name} did not listen on {host}:{port} in {START_TIMEOUT:g} s"
